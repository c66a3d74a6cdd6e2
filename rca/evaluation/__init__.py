"""Measuring engines on labelled cases: AC@k, Avg@5, fault-type accuracy, time."""
