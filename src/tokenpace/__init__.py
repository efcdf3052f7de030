"""tokenpace: measure how fast LLM APIs really are."""

__version__ = "0.1.0"
