"""The leaderboard's web app: server-rendered pages, each with a JSON twin, that work without JavaScript."""

from tokenpace.web.app import create_app

__all__ = ["create_app"]
