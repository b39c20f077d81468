"""Fuzz tests: mutated TensorFlow-written protos fed to the API and the CLI."""
