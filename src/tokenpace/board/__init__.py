"""What people read from the measurements: a Board (one ranked table, ranking.py) with its rows' JSON (rows.py),
each web page's model (endpoint_page.py, model_page.py, leaderboard_page.py; web/ renders it as HTML and as its
JSON twin), run summaries (summary.py), figures as text (numbers.py) and the terminal's tables (terminal.py).

Words: a *board* is one ranked table, a value; the *leaderboard* is what is published from it: the web page
(web/leaderboard.py, ``/`` and ``/leaderboard.json``) and ``tokenpace leaderboard``.
"""
