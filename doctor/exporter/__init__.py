"""``triton-doctor exporter``: the rules judged on an interval, served as Prometheus series."""
