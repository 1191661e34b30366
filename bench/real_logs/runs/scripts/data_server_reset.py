"""Manual data-parallel training whose batches come from a small data server (a thread of each
rank serving on 127.0.0.1, standing in for a remote shard service). At --fail-step the server of
--fail-rank drops the connection with a TCP reset (SO_LINGER 0): that rank's read raises
ConnectionResetError, an error of its own whose words ("Connection reset by peer") are those of
a peer failure. The others are left in the gradient all_reduce."""
import socket
import struct
import threading

import torch
import torch.distributed as dist
import torch.nn.functional as F

from common import TinyNet, cleanup, log, parse_args, setup


def serve(server: socket.socket, payload: bytes, reset: bool) -> None:
    conn, _ = server.accept()
    if reset:
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    else:
        conn.sendall(payload)
    conn.close()


def fetch_batch(rank: int, step: int, reset: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Ask the data server for this step's batch: 4 samples of 8 floats and their labels."""
    g = torch.Generator().manual_seed(1000 * rank + step)
    x, y = torch.randn(4, 8, generator=g), torch.randint(0, 2, (4,), generator=g)
    payload = x.numpy().tobytes() + y.numpy().tobytes()
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    thread = threading.Thread(target=serve, args=(server, payload, reset))
    thread.start()
    conn = socket.create_connection(server.getsockname())
    thread.join()
    data = b""
    while len(data) < len(payload):
        chunk = conn.recv(len(payload) - len(data))
        if not chunk:
            break
        data += chunk
    conn.close()
    server.close()
    xs = torch.frombuffer(bytearray(data[:128]), dtype=torch.float32).reshape(4, 8)
    ys = torch.frombuffer(bytearray(data[128:]), dtype=torch.int64)
    return xs, ys


def main():
    args = parse_args()
    rank, world = setup(args.timeout)
    model = TinyNet()
    for p in model.parameters():
        dist.broadcast(p.data, 0)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(args.steps):
        x, y = fetch_batch(rank, step, reset=(rank == args.fail_rank and step == args.fail_step))
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= world
        opt.step()
        log(f"step {step} loss {loss.item():.4f}")
    cleanup()


if __name__ == "__main__":
    main()
