"""Measuring: prompts, clients for each wire protocol, raw timelines and the metrics computed from them."""
