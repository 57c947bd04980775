"""Each way a server can fail the workbench, with a message that names the cause and the fix."""
from __future__ import annotations


class ServerError(RuntimeError):
    """A server could not be used; ``str()`` is the message the window shows."""


class AuthenticationFailed(ServerError):
    def __init__(self, url: str, status: int):
        super().__init__(
            f"The server at {url} refused the API key (HTTP {status}). Check the key (it is the value the "
            "server was started with, --api-key or VLLM_API_KEY), or leave it empty if the server needs none.")


class NotAVLLMServer(ServerError):
    def __init__(self, url: str, detail: str):
        super().__init__(
            f"{url} answers, but not as a vLLM server ({detail}). Check the address and port: it should be "
            "the base URL that `vllm serve` prints (for example http://127.0.0.1:8000).")


class NoAnswer(ServerError):
    def __init__(self, url: str, timeout_s: float):
        super().__init__(
            f"The server at {url} accepted the connection but sent no answer within {timeout_s:g} s. It may "
            "still be loading the model, or be overloaded: wait and connect again, or check its log.")


class CannotConnect(ServerError):
    def __init__(self, url: str, detail: str):
        super().__init__(
            f"Nothing answers at {url} ({detail}). Check that the server is running and that the host and "
            "port are right; a server on another machine must listen on its network address (--host 0.0.0.0).")


class TLSFailed(ServerError):
    def __init__(self, url: str, detail: str):
        super().__init__(
            f"The TLS certificate of {url} could not be verified ({detail}). Install the server's CA "
            "certificate, or, for a server you trust, turn certificate checks off for it in Connect to server.")


class MalformedMetrics(ServerError):
    def __init__(self, url: str, detail: str):
        super().__init__(
            f"The metrics at {url} could not be read as Prometheus text ({detail}). The live plots stay "
            "empty for this server; chat and batch still work. Check that the address is vLLM's own /metrics.")


class ConnectionLost(ServerError):
    def __init__(self, url: str, detail: str):
        super().__init__(
            f"The connection to the server at {url} was lost during the reply ({detail}). What was "
            "streamed so far is kept. The workbench reconnects on its own when the server is back; then "
            "send again (Regenerate).")
