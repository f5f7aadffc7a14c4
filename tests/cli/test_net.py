"""`agora-agent serve`/`demo` bind their socket themselves: the connections uvicorn accepts on it must have Nagle off.

uvicorn serves a pre-bound socket through `loop.create_server(sock=...)`, and asyncio turns TCP_NODELAY on for an
accepted connection only when the listening socket's proto is IPPROTO_TCP. With Nagle on, an SSE frame written while
the previous one is unacknowledged waits for the client's delayed ACK (~40 ms on Linux): the stream stutters.
"""

from __future__ import annotations

import asyncio
import socket

from agora_agent.cli._net import bind


async def test_connections_accepted_on_the_bound_socket_have_tcp_nodelay() -> None:
    sock = bind("serve", "127.0.0.1", 0)
    accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    def on_connect(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.set_result(writer.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        writer.close()

    server = await asyncio.start_server(on_connect, sock=sock)
    _, writer = await asyncio.open_connection(*sock.getsockname()[:2])
    try:
        nodelay = await asyncio.wait_for(accepted, 5)
    finally:
        writer.close()
        server.close()
        await server.wait_closed()
    assert nodelay != 0
