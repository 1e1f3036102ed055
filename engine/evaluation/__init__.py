"""The middle floor: running agents on cases, grading, statistics, diagnosis, gates and patches."""
