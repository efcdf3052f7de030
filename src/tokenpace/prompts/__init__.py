"""Prompts: what every request sends, built before the clock starts (corpus text and a task, images, the
correctness canary's line), a load test's datasets of request chains (synthetic, or read from a file), and the one
token count every figure uses (tiktoken's o200k_base, shipped in vocab/)."""
