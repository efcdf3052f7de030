"""The service: discovery of what to measure and the process that runs the sampler beside the web server."""
