"""Developer tools: the test control plane, demo, benchmarks and soak (not shipped in the wheel)."""
