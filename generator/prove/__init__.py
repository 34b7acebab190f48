"""What proves an entry against real releases: reproducers run in a sandbox against a real PyTorch,
and `encyclopedia verify` against the package index."""
