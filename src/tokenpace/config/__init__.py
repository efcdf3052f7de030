"""Configuration: endpoints and providers from TOML, presets, schedule settings, workload definitions."""
