"""Sending requests: request chains (datasets), the engine that releases them in bursts or in closed or open
loops, arrival schedules and sweeps, and a load test's figures and result document."""
