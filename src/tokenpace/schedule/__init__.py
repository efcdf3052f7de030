"""Scheduling: when each endpoint and workload is sampled (cadence, pure) and the sampler loop."""
