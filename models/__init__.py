"""The model catalog and adapters: which installed package or path provides which model."""
