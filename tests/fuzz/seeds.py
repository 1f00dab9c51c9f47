#!/usr/bin/env python3
"""Writes the seed corpus of each fuzz target into corpus/<target>/seed-*: the records the real
libraries wrote (tests/data/peers/*.json), the hand-written shapes of the demo seeds, idem's own
records, the regressions named in the issues, and typical URLs, event logs, server replies and
durations. Run it from anywhere; it rewrites only seed-* files (found-* inputs, kept forever, are
the fuzzers' own). Every file stays under 64 KiB."""
import base64
import glob
import hashlib
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(HERE, "corpus")
MAX_MS = 253402300799999
PREFIX = 8192  # what a monitor scan reads of a string: its first and last 8 KiB

FORMATS = ["idem", "powertools", "powertools-python", "node-idempotency", "express-idempotency",
           "idempotent-request", "camel", "json", "plain"]
TYPES = ["string", "hash", "list", "set", "zset", "stream"]


def i64(v):
    return struct.pack("<q", v)


def u64(v):
    return struct.pack("<Q", v)


written = {}


def put(target, name, data):
    if isinstance(data, str):
        data = data.encode()
    assert len(data) <= 64 * 1024, (target, name, len(data))
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)
    written.setdefault(target, 0)
    written[target] += 1


def record(fmt, typ, key, value=b"", tail=b"", fields=None, ttl=-2, now=0, stale_after=15 * 60000,
           writer_ttl=0, total=None, companion=False, ns="idempotency"):
    """fuzz_record's input: see the comment at the top of fuzz_record.cpp."""
    profile = 0 if fmt is None else FORMATS.index(fmt) + 1
    flags = TYPES.index(typ) | (8 if companion else 0) | (0x10 if total is not None else 0)
    extra = (total - len(value)) if total is not None else 1
    head = bytes([profile, flags]) + i64(ttl) + u64(now) + u64(stale_after) + u64(writer_ttl) + u64(extra - 1)
    enc = lambda s: s.encode() if isinstance(s, str) else s
    if typ == "hash":
        body = b"\x1e".join(enc(k) + b"\x1e" + enc(v) for k, v in fields)
    else:
        body = enc(value)
    return head + enc(key) + b"\x1f" + enc(ns) + b"\x1f" + body + b"\x1f" + enc(tail)


def peers():
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "data", "peers", "*.json"))):
        doc = json.load(open(path))
        profile = doc["profile"]
        fmt = {"camel-redis": "camel"}.get(profile, profile)
        writer_ttl = 24 * 3600000 if fmt in ("node-idempotency", "express-idempotency") else 0
        for n, r in enumerate(doc["records"]):
            value = r["value"] if isinstance(r["value"], str) else ""
            if "value_base64" in r and isinstance(r["value_base64"], str):
                value = base64.b64decode(r["value_base64"])
            key = r["key"]
            if "key_base64" in r:
                key = base64.b64decode(r["key_base64"])
            total = None
            tail = b""
            if "elided" in r:
                e = r["elided"]
                full = value.replace(e["marker"], e["char"] * e["count"]).encode()
                value, tail, total = full[:PREFIX], full[-PREFIX:], len(full)
            now = r.get("captured_at_ms", 0)
            for fmt_or_none in (None, fmt):
                name = "peer-%s-%d%s" % (profile, n, "" if fmt_or_none is None else "-as-" + fmt)
                put("record", name, record(fmt_or_none, r["type"], key, value, tail, ttl=r.get("pttl_ms", -2),
                                           now=now, writer_ttl=writer_ttl, total=total))
            if r["type"] == "string" and isinstance(value, (str, bytes)):
                v = value.encode() if isinstance(value, str) else value
                put("json", "peer-%s-%d" % (profile, n), bytes([len(v) // 2 % 256]) + v)


def shapes():
    now = 1795431450953
    past, soon = now // 1000 - 1200, now // 1000 + 600
    hand = {
        "processing": '{"status":"PROCESSING","started_at":%d,"lock_expiry":%d}' % (past, soon),
        "pending": '{"status":"PENDING","started_at":%d}' % (now // 1000),
        "completed": '{"status":"COMPLETED","response_body":{"charged":true,"amount":1999,"currency":"EUR"}}',
        "failed": '{"status":"FAILED","error":"card declined"}',
        "word-processing": "PROCESSING",
        "word-completed": "COMPLETED",
        "broken-json": '{"status":"COMPLETED","response":',
        "binary": b"\x00\x9f\x92\x96\xff",
        "iso": '{"status":"STARTED","started_at":"2026-11-23T12:00:00.5+02:00","lock_expiry":"2026-11-23T12:30:00Z"}',
        # issue #21: a lease far in the future once overflowed, read expired, and purge --stale took it
        "regression-lock-expiry-far-future": '{"status":"STARTED","lock_expiry":"9999999999999999999999"}',
        "regression-lock-expiry-number": '{"status":"STARTED","lock_expiry":9999999999999999999999}',
        "regression-lock-expiry-exponent": '{"status":"STARTED","lock_expiry":1e30}',
        "regression-lock-expiry-negative": '{"status":"STARTED","lock_expiry":-1}',
        "regression-started-far-future": '{"status":"STARTED","started_at":"99999999999999999999"}',
    }
    for name, value in hand.items():
        put("record", "shape-" + name, record(None, "string", "idempotency:{weird}", value, ttl=3600000, now=now))
        v = value.encode() if isinstance(value, str) else value
        put("json", "shape-" + name, bytes([len(v) // 2]) + v)
    put("record", "shape-status-hash", record(None, "hash", "idempotency:{h}", fields=[
        ("status", "PROCESSING"), ("lock_expiry", str(soon)), ("started_at", str(past))], ttl=60000, now=now))
    put("record", "regression-hash-lock-expiry-far-future", record(None, "hash", "idempotency:{weird}", fields=[
        ("status", "STARTED"), ("lock_expiry", "9999999999999999999999")], ttl=60000, now=now))
    put("record", "shape-queue", record(None, "list", "idempotency:{queue-by-mistake}", ttl=60000, now=now))
    # idem's own hashes, as lua/*.lua write them
    fence = now * 1000 + 123
    native = {
        "first": [("state", "STARTED"), ("token", "a" * 32), ("fence", str(fence)), ("lease_ms", "30000")],
        "later": [("state", "STARTED"), ("fp", "sha256:00"), ("token", "b" * 32), ("fence", str(fence + 1)),
                  ("attempt", "2"), ("started_ms", str(now)), ("lease_until_ms", str(now + 30000)),
                  ("created_ms", str(now - 60000))],
        "completed": [("state", "COMPLETED"), ("token", "a" * 32), ("fence", str(fence)), ("lease_ms", "30000"),
                      ("response", '{"ok":true}'), ("retention_ms", "86400000")],
        "failed": [("state", "FAILED"), ("token", "a" * 32), ("fence", str(fence)), ("failure", "terminal"),
                   ("error", "declined"), ("finished_ms", str(now))],
        "regression-retention-huge": [("state", "COMPLETED"), ("fence", str(fence)),
                                      ("retention_ms", "9223372036854775807")],
    }
    for name, fields in native.items():
        put("record", "native-" + name, record(None, "hash", "idempotency:{n}", fields=fields, ttl=86000000, now=now))
    put("record", "regression-native-ttl-huge", record(None, "hash", "idempotency:{n}", fields=native["completed"],
                                                       ttl=9223372036854775807, now=now))
    # the round trip (flags bit 5): stage, fingerprint, terminal, then the numbers and strings
    for stage in range(6):
        body = bytes([stage, 1, stage % 2]) + b"".join(u64(hashlib.sha256(b"%d%d" % (stage, k)).digest()[0] * 977 + k)
                                                        for k in range(10))
        put("record", "native-roundtrip-%d" % stage, bytes([0, 0x20]) + body +
            b"\x1f".join([b"0123456789abcdef0123456789abcdef", b"sha256:ab", b'{"ok":1}', b"boom", b"ops", b"stuck"]))


def urls():
    for n, u in enumerate([
        "redis://127.0.0.1:6379/0", "redis://localhost", "redis://ops:secret@cache:6379/0",
        "redis://:onlypassword@cache", "redis://user@host:1/15", "redis://[::1]:6380/2",
        "redis://a%40b:p%3Ass@h", "unix:///run/redis.sock", "unix://ops:pw@/run/redis.sock?db=3",
        "rediss://ops:secret@cache:6380/0", "redis+sentinel://mymaster@s1:26379,s2:26379/0",
        "redis://h:0", "redis://h:65536", "redis://u:p@", "redis://%zz@h",
        # regressions: a sign taken for an escape; a user that describe() must escape
        "redis://u:%-1@h", "redis://a%3Ab%2Fc:secret@h/1", "unix://a%40b:pw@/run/r.sock",
        # TLS and Sentinel forms: accepted, then refused
        "rediss://cache", "rediss://[::1]:6380/1", "redis-sentinel://s1,s2:26380,[::1]:5/3#orders",
        "redis-sentinel://svc:s3cret@s1:26379/0#mymaster", "rediss-sentinel://ops:pw@s1,s2#m%20x",
        "redis-sentinel://u:p#w@h#m", "rediss-sentinel://a%40b@s1/2#m#n",
        "redis-sentinel://h1,h2", "redis-sentinel://h1,,h2#m", "redis-sentinel://h1:1,h2:x#m", "redis://h:1#m",
        "redis://h1,h2:1", "rediss-sentinel://s1#", "redis-sentinel://ops:secret@#m",
        # regression: a master's name that describe() must escape
        "rediss-sentinel://s1#50%25off", "redis-sentinel://s1#a%23b%2F",
    ]):
        put("url", "%02d" % n, u)


def eventlogs():
    put("eventlog", "plain", "".join('{"id":"pay-%d","payload":{"amount":%d},"at_ms":%d}\n' % (i, i * 7, i * 10)
                                      for i in range(5)))
    put("eventlog", "mixed", '{"id":7}\n\n{"id":"a","payload":[1,"x",null],"at_ms":5.5}\n{"id":"b","at_ms":0}\n')
    put("eventlog", "bad-line", '{"id":"a"}\n{oops\n')
    put("eventlog", "regression-at-ms-huge", '{"id":"a","at_ms":1e300}\n{"id":"b","at_ms":-9.3e18}\n')
    # nlohmann's dump() of the payload recurses once per level
    put("eventlog", "regression-deep-payload", '{"id":"a","payload":' + "[" * 30000 + "]" * 30000 + "}\n")


def captures():
    sep = b"\x1f"

    def entry(name, entry_id, fields, id_field=b"id", payload_field=b"payload"):
        put("capture", name, b"\x00" + sep.join([entry_id, id_field, payload_field] + fields))

    entry("entry", b"1700000000000-0", [b"id", b"order-1", b"payload", b'{"amount":5}'])
    entry("entry-text", b"5-3", [b"payload", b"hello", b"id", b"a b"])
    entry("entry-binary", b"5-3", [b"id", b"bin", b"payload", b"\xff\x00\xfe"])
    entry("entry-no-id", b"5-0", [b"payload", b"1"])
    entry("entry-bad-id", b"soon", [b"id", b"x", b"payload", b"1"])
    entry("entry-huge-time", b"253402300800000-0", [b"id", b"x", b"payload", b"1"])
    entry("entry-not-utf8-id", b"1-0", [b"id", b"\xc3\x28", b"payload", b"1"])
    entry("entry-other-fields", b"1-0", [b"key", b"k", b"body", b"[1]"], b"key", b"body")
    # one level short of what replay takes, and one past it: a line holds the payload
    entry("entry-deep-255", b"1-0", [b"id", b"d", b"payload", b"[" * 255 + b"]" * 255])
    entry("entry-deep-256", b"1-0", [b"id", b"d", b"payload", b"[" * 256 + b"]" * 256])
    # capture's fast path (copied through) against the library's text: key order, spaces, escapes,
    # numbers at the edges of int64/uint64, floats, -0, repeated keys, \u escapes, UTF-8
    for i, text in enumerate([
            b'{"order":7,"amount_cents":259,"currency":"EUR","customer":"c-7"}',
            b' { "b" : [ 1 , {"z":null,"a":true} ], "a" : "x\\n\\"y" } ',
            b'[18446744073709551615,-9223372036854775808,18446744073709551616,-9223372036854775809]',
            b'[1.5,1e3,-0,0,-1,01]',
            b'{"a":1,"a":2}',
            b'{"b":1,"a":2,"b":3}',
            b'["\\u00e9","\\/","\\u0001","\xc3\xa9\xf0\x9f\x98\x80","\x7f"]',
            b'{"\xc3\xa9":1,"z":2,"\\n":3}',
            b'"plain" x',
            b"[" * 64 + b"]" * 64,
            b"[" * 65 + b"]" * 65]):
        entry("entry-fast-%d" % i, b"1-0", [b"id", b"f", b"payload", text])

    def lines(name, id_path, payload_path, time_path, text):
        put("capture", name, b"\x01" + sep.join([id_path, payload_path, time_path, text]))

    lines("jsonl", b"meta.key", b"body", b"ts",
          b'{"meta":{"key":"a-1"},"body":{"x":1},"ts":1700000000000}\nnot json\n\n'
          b'{"meta":{"key":42},"body":[1,2],"ts":"1700000000005"}\n{"meta":{},"body":1}\n')
    lines("jsonl-whole-line", b"id", b".", b"", b'{"id":"a","v":[1,{"w":null}]}\n{"id":{"no":1}}\n')
    lines("jsonl-bad-times", b"id", b"payload", b"t",
          b'{"id":"a","payload":1,"t":-1}\n{"id":"b","payload":1,"t":1e300}\n{"id":"c","payload":1,"t":"12x"}\n')
    lines("jsonl-deep", b"id", b".", b"", b'{"id":"a","p":' + b"[" * 254 + b"]" * 254 + b"}\n")


def bulk(s):
    s = s.encode() if isinstance(s, str) else s
    return b"$%d\r\n%s\r\n" % (len(s), s)


def resp():
    now_us = 1795431450953123
    replies = {
        "fresh": bulk(str(now_us)),
        "acquired": bulk("%d ACQUIRED %d 2 1795431480953 1" % (now_us, now_us)),
        "duplicate": bulk('%d DUPLICATE %d {"ok":true}' % (now_us, now_us - 5)),
        "in-progress": bulk("%d IN_PROGRESS 2500 1 %d" % (now_us, now_us - 9)),
        "failed": bulk("%d FAILED %d card declined" % (now_us, now_us)),
        "mismatch": bulk("0 MISMATCH COMPLETED sha256:abc"),
        "unusable": bulk("0 UNUSABLE key holds a list, not an idem record"),
        "batch": b"*3\r\n" + bulk(str(now_us)) + bulk("ACQUIRED 5 2 99 0") + b":%d\r\n" % now_us,
        "moved": b"-MOVED 12739 127.0.0.1:7002\r\n",
        "ask": b"-ASK 3999 10.0.0.1:7001\r\n",
        "tryagain": b"-TRYAGAIN Multiple keys request during rehashing of slot\r\n",
        "scan": b"*2\r\n" + bulk("17") + b"*2\r\n" + bulk("idempotency:{a}") + bulk("idempotency:{a}:meta"),
        "time": b"*2\r\n" + bulk("1795431450") + bulk("953123"),
        "cluster-slots": b"*1\r\n*3\r\n:0\r\n:16383\r\n*3\r\n" + bulk("127.0.0.1") + b":7000\r\n" + bulk("id"),
        "status-nil-int": b"+OK\r\n$-1\r\n:42\r\n*-1\r\n",
        "negative-fence": bulk("-5 ACQUIRED -1 -2 -3 0"),
        # issue #21's findings, fixed: TIME that overflowed the monitor's clock, or is no time
        "time-overflow": b"*2\r\n" + bulk("9223372036854775807") + bulk("0"),
        "time-negative": b"*2\r\n" + bulk("-1") + bulk("0"),
        "time-year-10000": b"*2\r\n" + bulk("253402300800") + bulk("0"),
        "time-micros-out": b"*2\r\n" + bulk("1795431450") + bulk("1000000") + b"*1\r\n" + bulk("1"),
        # redirects read leniently: a slot or a port with junk after it, no address at all
        "moved-lenient": b"-MOVED 12abc h:99999abc\r\n-MOVED 1 \r\n",
        "moved-slot-junk": b"-MOVED 12abc h:1\r\n-ASK -0 h:1\r\n-MOVED +1 h:1\r\n-MOVED 16384 h:1\r\n",
        "moved-port-junk": b"-MOVED 1 h:99999abc\r\n-MOVED 1 h:65536\r\n-MOVED 1 h:0\r\n-MOVED 1 h:+1\r\n"
                           b"-MOVED 1 h:\r\n-MOVED 1 h 1:2\r\n",
        "moved-empty-address": b"-MOVED 1 \r\n-ASK 1\r\n",
        "moved-ipv6": b"-MOVED 3999 ::1:7000\r\n-ASK 16383 [::1]:7001\r\n",
        "moved-unknown-endpoint": b"-MOVED 3999 :6380\r\n",
        # SENTINEL get-master-addr-by-name: a primary, none, and what a broken sentinel could say
        "sentinel-primary": b"*2\r\n" + bulk("127.0.0.1") + bulk("6379"),
        "sentinel-primary-ipv6": b"*2\r\n" + bulk("::1") + bulk("26379"),
        "sentinel-unknown": b"*-1\r\n$-1\r\n",
        "sentinel-port-junk": b"*2\r\n" + bulk("127.0.0.1") + bulk("6379abc"),
        "sentinel-port-range": b"*2\r\n" + bulk("h") + bulk("0") + b"*2\r\n" + bulk("h") + bulk("65536") +
                               b"*2\r\n" + bulk("h") + bulk("-6379") + b"*2\r\n" + bulk("h") + bulk(" 6379"),
        "sentinel-empty-host": b"*2\r\n" + bulk("") + bulk("6379"),
        "sentinel-shapes": b"*3\r\n" + bulk("h") + bulk("6379") + bulk("x") + b"*2\r\n" + bulk("h") +
                           b":6379\r\n" + b"*0\r\n" + b"-ERR no such master\r\n",
        # arrays a server announces before sending them: hiredis allocated their pointers at once
        "array-nested-over-bound": b"*2\r\n*16777215\r\n",
        "array-at-bound": b"*2\r\n*16777214\r\n" + b":1\r\n" * 4,
    }
    for name, data in replies.items():
        put("resp", name, bytes([7, 30]) + data)


def durations():
    for n, text in enumerate(["30s", "250ms", "5m", "2h", "1d", "90", "1.5s", "1d1h1m1s", "1h30m", "512KiB",
                              "1MiB", "10k", "4096", "1e3", "-1s", "nan", ""]):
        put("duration", "%02d" % n, u64(90061000 + n) + text.encode())


def http():
    # the first byte: bit 0 small limits, bits 1-7 where the stream is cut
    seeds = {
        "get": b"\x00GET /orders?id=1&b=2 HTTP/1.1\r\nHost: a\r\n\r\n",
        "post-length": b'\x02POST /orders HTTP/1.1\r\nHost: a\r\nIdempotency-Key: "k-1"\r\n'
                       b"Content-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"amount\":1}",
        "chunked": b"\x04POST /up HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                   b"5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nTrailer-A: x\r\n\r\n",
        "pipelined": b"\x06GET /1 HTTP/1.1\r\nHost: a\r\n\r\nPOST /2 HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\n"
                     b"abcGET /3 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\nGET /4 HTTP/1.1\r\n\r\n",
        "expect": b"\x08PUT /x HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\nbody",
        "http10": b"\x0aGET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /b HTTP/1.0\r\n\r\n",
        "bare-lf": b"\x0cGET / HTTP/1.1\nHost: a\n\n",
        "bad-folding": b"\x0eGET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n",
        "cl-and-te": b"\x10POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        "two-lengths": b"\x12POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
        "too-large-small-limits": b"\x01POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 1000\r\n\r\n",
        "long-line-small-limits": b"\x03GET /" + b"a" * 100 + b" HTTP/1.1\r\nHost: a\r\n\r\n",
        "many-headers-small-limits": b"\x05GET / HTTP/1.1\r\nHost: a\r\n"
                                     + b"".join(b"X-%d: v\r\n" % i for i in range(12)) + b"\r\n",
        "http2": b"\x14PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
        "gzip-coding": b"\x16POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
        "chunk-huge": b"\x19POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFFFFFFF\r\n",
        "binary-body": b"\x1aPOST /bin HTTP/1.1\r\nHost: a\r\nContent-Length: 6\r\n\r\n\x00\xff\r\n\x80\x01",
        "options-star": b"\x1cOPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n",
        "expect-other": b"\x1ePOST / HTTP/1.1\r\nHost: a\r\nExpect: 200-ok\r\n\r\n",
    }
    for name, data in seeds.items():
        put("http", name, data)


def httpresponse():
    # the first byte: bit 0 HEAD, bit 1 small body limit (64), bit 2 the connection closes, bits 3-7 the cut
    seeds = {
        "created": b"\x00HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nLocation: /o/1\r\n"
                   b"Set-Cookie: s=1\r\nContent-Length: 11\r\n\r\n{\"id\":1234}",
        "chunked": b"\x08HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                   b"5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nTrailer-A: x\r\n\r\n",
        "until-close": b"\x0cHTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nall of it until the end",
        "keep-alive-10": b"\x10HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok",
        "close": b"\x18HTTP/1.1 409 Conflict\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
        "interim": b"\x20HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\n\r\n"
                   b"HTTP/1.1 201 Created\r\nContent-Length: 3\r\n\r\nabc",
        "head": b"\x01HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n",
        "no-content": b"\x28HTTP/1.1 204 No Content\r\nETag: \"e1\"\r\n\r\n",
        "not-modified": b"\x30HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n",
        "too-large": b"\x02HTTP/1.1 200 OK\r\nContent-Length: 65\r\n\r\n" + b"x" * 65,
        "chunks-too-large": b"\x3aHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                            b"20\r\n" + b"a" * 32 + b"\r\n21\r\n" + b"b" * 33 + b"\r\n0\r\n\r\n",
        "switching": b"\x40HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n",
        "bad-status": b"\x48HTTP/1.1 2000 OK\r\n\r\n",
        "http2": b"\x50HTTP/2 200\r\n\r\n",
        "gzip": b"\x58HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
        "bad-length": b"\x60HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n",
        "cut-short": b"\x6cHTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this",
        "bare-lf": b"\x70HTTP/1.1 200 OK\nContent-Length: 2\n\nok",
        "binary": b"\x78HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\n\x00\xff\r\n\x80\x01",
        "bad-chunk-end": b"\x80HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX\r\n0\r\n\r\n",
        "obs-fold": b"\x88HTTP/1.1 200 OK\r\nX-A: a\r\n b\r\nContent-Length: 0\r\n\r\n",
        "space-in-name": b"\x90HTTP/1.1 200 OK\r\nX A: a\r\nContent-Length: 0\r\n\r\n",
        "cr-in-value": b"\x98HTTP/1.1 200 OK\r\nX-A: a\rSet-Cookie: evil\r\nContent-Length: 0\r\n\r\n",
        "pipelined-after": b"\xa0HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\naHTTP/1.1 500 Oops\r\n\r\n",
    }
    for name, data in seeds.items():
        put("httpresponse", name, data)


if __name__ == "__main__":
    peers()
    shapes()
    urls()
    eventlogs()
    captures()
    resp()
    durations()
    http()
    httpresponse()
    for t, n in sorted(written.items()):
        print("%-9s %d seeds" % (t, n))
