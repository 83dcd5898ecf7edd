// A scripted Socket Native server for what the daemon never does (ask the client for
// tools/list, leave a ping unanswered): a bare RFC 6455 server over node:http, text frames
// only, enough for one test client.

import { createHash } from 'node:crypto';
import { once } from 'node:events';
import http from 'node:http';

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

function frame(opcode, payload) {
  const n = payload.length;
  const head =
    n < 126
      ? Buffer.from([0x80 | opcode, n])
      : n < 65536
        ? Buffer.from([0x80 | opcode, 126, n >> 8, n & 0xff])
        : Buffer.concat([Buffer.from([0x80 | opcode, 127]), bigLength(n)]);
  return Buffer.concat([head, payload]);
}

function bigLength(n) {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt(n));
  return b;
}

/** Splits the complete frames off the front of `buf`: `[frames, rest]`. */
function parseFrames(buf) {
  const frames = [];
  for (;;) {
    if (buf.length < 2) break;
    const opcode = buf[0] & 0x0f;
    let len = buf[1] & 0x7f;
    let off = 2;
    if (len === 126) {
      if (buf.length < 4) break;
      len = buf.readUInt16BE(2);
      off = 4;
    } else if (len === 127) {
      if (buf.length < 10) break;
      len = Number(buf.readBigUInt64BE(2));
      off = 10;
    }
    const masked = (buf[1] & 0x80) !== 0;
    const mask = masked ? buf.subarray(off, off + 4) : null;
    if (masked) off += 4;
    if (buf.length < off + len) break;
    const payload = Buffer.from(buf.subarray(off, off + len));
    if (mask) for (let i = 0; i < payload.length; i++) payload[i] ^= mask[i & 3];
    frames.push({ opcode, payload });
    buf = buf.subarray(off + len);
  }
  return [frames, buf];
}

/**
 * Starts a server on loopback. `onMessage(peer, message)` sees every JSON message a client
 * sends; `peer.send(obj)` answers. Each connection first gets a `welcome`.
 */
export async function fakeServer(onMessage) {
  const server = http.createServer((req, res) => res.writeHead(426).end());
  const sockets = new Set();
  server.on('upgrade', (req, socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    const accept = createHash('sha1')
      .update(req.headers['sec-websocket-key'] + GUID)
      .digest('base64');
    socket.write(
      'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
        `Sec-WebSocket-Accept: ${accept}\r\n\r\n`,
    );
    const query = new URL(req.url, 'http://x').searchParams;
    const peer = {
      query,
      send: (message) => socket.write(frame(1, Buffer.from(JSON.stringify(message)))),
      close: () => socket.destroy(),
    };
    let buf = Buffer.alloc(0);
    socket.on('data', (chunk) => {
      let frames;
      [frames, buf] = parseFrames(Buffer.concat([buf, chunk]));
      for (const f of frames) {
        if (f.opcode === 1) onMessage(peer, JSON.parse(f.payload.toString('utf8')));
        else if (f.opcode === 8) socket.end(frame(8, f.payload.subarray(0, 2)));
        else if (f.opcode === 9) socket.write(frame(10, f.payload));
      }
    });
    peer.send({
      jsonrpc: '2.0',
      method: 'welcome',
      params: { sessionId: query.get('sessionId'), clientType: query.get('clientType'), version: '1.0.0' },
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `ws://127.0.0.1:${server.address().port}`,
    close() {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}
