"""Benchmarks and tools that need Qt: the real window, offscreen. The rest of ``bench`` runs without Qt."""
