"""Batches over workers: executors (threads, processes, Ray, yours), the worker side, dispatch and
the answer check, the kept backends."""
