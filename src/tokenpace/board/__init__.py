"""Boards: ranking, model rows and run summaries, and their terminal rendering."""
