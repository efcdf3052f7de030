"""Sending requests: the engine that releases a dataset's request chains (prompts/) in bursts or in closed or open
loops, arrival schedules and sweeps, and a load test's figures and result document."""
