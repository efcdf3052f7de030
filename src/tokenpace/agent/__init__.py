"""Probe agents: ``tokenpace agent --region NAME`` takes its region's orders from the queue and measures them.

An agent imports only what measuring and storing need (config, measure and store; ``tokenpace agent`` starts
the simulators of simulated endpoints): it runs far from the board, on any machine that reaches the store.
"""
