#!/usr/bin/env python3
"""Runs the hostile-client catalogue of issue 11 against `qwen35 serve` and prints what it costs,
as JSON: RSS under a gzip bomb and unauthenticated uploads, /health latency with many slow
connections open, the gap an image request puts into another client's stream, a 100k-key body.

usage: scripts/server_hostile_check.py [--bin build/bin/qwen35] [--slow 400] [--image-side 8000] [serve args...]
It starts its own server (the bundled tiny model unless serve args say otherwise) on a free port.
"""
import argparse, gzip, json, os, re, socket, struct, subprocess, sys, threading, time, zlib, base64

def rss_mb(pid):
    for line in open(f'/proc/{pid}/status'):
        if line.startswith('VmRSS:'):
            return int(line.split()[1]) / 1024
    return 0.0

def request(port, raw, timeout=60, read=True):
    s = socket.create_connection(('127.0.0.1', port), timeout=timeout)
    try:
        s.sendall(raw)
    except OSError:
        pass
    if not read:
        return s
    data = b''
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            data += d
            head, _, body = data.partition(b'\r\n\r\n')
            m = re.search(rb'content-length: *(\d+)', head, re.I)
            if m and len(body) >= int(m.group(1)):
                break
    except OSError:
        pass
    s.close()
    return data

def status(data):
    m = re.match(rb'HTTP/1\.\d (\d+)', data)
    return int(m.group(1)) if m else 0

def post(path, body, extra='', key=None):
    auth = f'Authorization: Bearer {key}\r\n' if key else ''
    return (f'POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{auth}{extra}'
            f'Content-Length: {len(body)}\r\n\r\n').encode() + body

def png_zeros(side):
    row = b'\x00' + b'\x00' * ((side + 7) // 8)
    idat = zlib.compress(row * side, 9)
    def chunk(t, d): return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
    return (b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', side, side, 1, 0, 0, 0, 0)) +
            chunk(b'IDAT', idat) + chunk(b'IEND', b''))

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--bin', default=os.path.join(os.path.dirname(__file__), '..', 'build', 'bin', 'qwen35'))
    ap.add_argument('--slow', type=int, default=400)
    ap.add_argument('--image-side', type=int, default=8000)
    args, serve_args = ap.parse_known_args()
    key = 'hostile-check-key'
    proc = subprocess.Popen([args.bin, 'serve', '--port', '0', '--api-key', key, *serve_args],
                            stderr=subprocess.PIPE, text=True)
    port = None
    for line in proc.stderr:
        m = re.search(r'listening on http://[^:]+:(\d+)', line)
        if m:
            port = int(m.group(1))
        if 'ready:' in line:
            break
    threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
    out = {}
    hello = json.dumps({'messages': [{'role': 'user', 'content': 'Hi'}], 'max_tokens': 4}).encode()
    try:
        base = rss_mb(proc.pid)
        out['rss_idle_mb'] = round(base, 1)
        # 1. A 0.3 MB gzip body that inflates to 300 MB.
        inflated = b'{"messages":[{"role":"user","content":"hi"}],"pad":"' + b'a' * (300 << 20) + b'"}'
        bomb = gzip.compress(inflated, 9)
        del inflated
        r = request(port, post('/v1/chat/completions', bomb, 'Content-Encoding: gzip\r\n', key))
        out['gzip_bomb'] = {'compressed_mb': round(len(bomb) / 2**20, 2), 'status': status(r),
                            'rss_after_mb': round(rss_mb(proc.pid), 1)}
        # 2. 18 unauthenticated 30 MB uploads, each sending 30 MB.
        t0 = time.time()
        statuses = []
        for _ in range(18):
            s = request(port, post('/v1/chat/completions', b' ' * (30 << 20)), read=True, timeout=10)
            statuses.append(status(s))
        out['unauthenticated_30mb_posts'] = {'count': 18, 'statuses': sorted(set(statuses)),
                                             'seconds': round(time.time() - t0, 2), 'rss_after_mb': round(rss_mb(proc.pid), 1)}
        # 3. Slow connections: a header byte every 0.5 s each.
        rss_before_slow = rss_mb(proc.pid)
        slow = []
        for _ in range(args.slow):
            c = socket.create_connection(('127.0.0.1', port))
            c.sendall(b'GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ')
            slow.append(c)
        stop = threading.Event()
        def drip():
            while not stop.is_set():
                for c in slow:
                    try:
                        c.send(b'z')
                    except OSError:
                        pass
                time.sleep(0.5)
        threading.Thread(target=drip, daemon=True).start()
        time.sleep(1.2)
        rss_with_slow = rss_mb(proc.pid)
        lat = []
        for _ in range(20):
            t = time.time()
            r = request(port, b'GET /health HTTP/1.1\r\nHost: x\r\n\r\n')
            lat.append((time.time() - t) * 1000)
            time.sleep(0.05)
        t = time.time()
        r = request(port, post('/v1/chat/completions', hello, key=key))
        chat_ms = (time.time() - t) * 1000
        out['slow_connections'] = {'open': args.slow, 'health_ms_median': round(sorted(lat)[len(lat) // 2], 2),
                                   'health_ms_max': round(max(lat), 2), 'chat_status': status(r),
                                   'chat_ms': round(chat_ms, 1), 'rss_before_mb': round(rss_before_slow, 1),
                                   'rss_with_them_mb': round(rss_with_slow, 1)}
        stop.set()
        for c in slow:
            c.close()
        # 4. An image request beside a stream: the largest gap between the stream's chunks.
        stream_body = json.dumps({'messages': [{'role': 'user', 'content': 'Tell a long story.'}], 'max_tokens': 3000,
                                  'ignore_eos': True, 'temperature': 0, 'stream': True}).encode()
        times = []
        def stream():
            s = socket.create_connection(('127.0.0.1', port))
            s.sendall(post('/v1/chat/completions', stream_body, key=key))
            while True:
                d = s.recv(65536)
                if not d or b'[DONE]' in d:
                    break
                times.append(time.time())
            s.close()
        th = threading.Thread(target=stream)
        th.start()
        time.sleep(1.0)
        png = png_zeros(args.image_side)
        body = json.dumps({'messages': [{'role': 'user', 'content': [
            {'type': 'image_url', 'image_url': {'url': 'data:image/png;base64,' + base64.b64encode(png).decode()}},
            {'type': 'text', 'text': 'What is it?'}]}], 'max_tokens': 1}).encode()
        t_img = time.time()
        peak = [0.0]
        def watch():
            while th.is_alive() and time.time() - t_img < 600:
                peak[0] = max(peak[0], rss_mb(proc.pid))
                time.sleep(0.05)
        threading.Thread(target=watch, daemon=True).start()
        r = request(port, post('/v1/chat/completions', body, key=key), timeout=600)
        t_done = time.time()
        th.join()
        during = [b - a for a, b in zip(times, times[1:]) if a >= t_img - 0.01 and b <= t_done + 0.5]
        worst = sorted(((b - a, a - t_img) for a, b in zip(times, times[1:]) if a >= t_img - 0.01 and b <= t_done + 0.5),
                       reverse=True)[:5]
        before = [b - a for a, b in zip(times, times[1:]) if b < t_img]
        usage = json.loads(r.partition(b'\r\n\r\n')[2] or b'{}').get('usage', {}) if status(r) == 200 else {}
        out['image_beside_stream'] = {'png_side': args.image_side, 'png_kb': round(len(png) / 1024, 1),
                                      'image_status': status(r), 'image_prompt_tokens': usage.get('prompt_tokens'),
                                      'image_request_s': round(t_done - t_img, 2),
                                      'stream_gap_ms_before': round(max(before) * 1000, 1) if before else None,
                                      'stream_gap_ms_max_during': round(max(during) * 1000, 1) if during else None,
                                      'worst_gaps_ms_at_s': [[round(g * 1000), round(at, 2)] for g, at in worst],
                                      'stream_chunks_during': len(during),
                                      'peak_rss_mb': round(peak[0], 1)}
        # 5. 100k keys in one object.
        keys = ','.join(f'"k{i}":0' for i in range(100000))
        body = ('{"messages":[{"role":"user","content":"hi"}],"max_tokens":1,' + keys + '}').encode()
        t = time.time()
        r = request(port, post('/v1/chat/completions', body, key=key))
        out['json_100k_keys'] = {'body_mb': round(len(body) / 2**20, 2), 'status': status(r),
                                 'ms': round((time.time() - t) * 1000, 1)}
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    print(json.dumps(out, indent=2))

if __name__ == '__main__':
    main()
