"""The streaming pipeline, free of web code."""
