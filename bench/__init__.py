"""Benchmarks of Batch Gateway (``make bench``): every figure a ratio to a floor measured in the same run.

``python -m bench`` runs them all and writes ``bench/results/summary.json``; see ``bench/run.py``.
"""
