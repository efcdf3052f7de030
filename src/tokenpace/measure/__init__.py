"""Measuring one request: its raw timeline, why it failed if it did, the metrics derived from it, the sample it
becomes, and figures over many samples."""
