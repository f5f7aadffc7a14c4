"""A run's stream: typed frames (`frames.py`), token sinks in process (`sink.py`) or on Redis Streams
(`redis.py`), and the encoders to wire protocols (`encoding.py`: the AI SDK UI message stream in
`ui_message_stream.py`, AG-UI in `agui.py`). Import from the modules.
"""
