"""Storage: conversations, batch runs and engine runs kept in SQLite as they happen. No Qt, no vLLM.

A thread of its own writes (``writer.StorageWriter``), fed with immutable records that
``recorder.ModelRecorder`` derives from the application model's signals; at start,
``restore`` reads everything back into the model. ``database.open_database`` says what is wrong
with a file it cannot use (corrupted, locked by another instance, read-only, from a newer schema)
instead of failing, and writes nothing over it.
"""
