// Draws the toolbar icon (a browser window bridged to a local program) as PNGs, with no image
// library: `node icons/make-icons.mjs icons`.
import { deflateSync } from 'node:zlib';
import { writeFileSync } from 'node:fs';

const BLUE = [9, 105, 218], WHITE = [255, 255, 255];
// Coverage tests in the 128-unit design space.
const inRoundRect = (x, y, x0, y0, w, h, r) => {
  const cx = Math.min(Math.max(x, x0 + r), x0 + w - r), cy = Math.min(Math.max(y, y0 + r), y0 + h - r);
  return (x - cx) ** 2 + (y - cy) ** 2 <= r * r && x >= x0 && x <= x0 + w && y >= y0 && y <= y0 + h;
};
const white = (x, y) =>
  (inRoundRect(x, y, 17.5, 25.5, 93, 77, 14.5) && !inRoundRect(x, y, 26.5, 34.5, 75, 59, 5.5)) ||
  (x >= 22 && x <= 106 && y >= 46 && y <= 54) ||
  (x - 46) ** 2 + (y - 75) ** 2 <= 64 || (x - 82) ** 2 + (y - 75) ** 2 <= 64 ||
  (x >= 46 && x <= 82 && Math.abs(y - 75) <= 3);
const blue = (x, y) => inRoundRect(x, y, 4, 4, 120, 120, 26);

function png(n) {
  const S = 4, rows = [];
  for (let py = 0; py < n; py++) {
    const row = [0];
    for (let px = 0; px < n; px++) {
      let a = 0, w = 0;
      for (let sy = 0; sy < S; sy++) for (let sx = 0; sx < S; sx++) {
        const x = ((px + (sx + 0.5) / S) * 128) / n, y = ((py + (sy + 0.5) / S) * 128) / n;
        if (blue(x, y)) { a++; if (white(x, y)) w++; }
      }
      const t = a ? w / a : 0;
      const c = BLUE.map((b, i) => Math.round(b + (WHITE[i] - b) * t));
      row.push(...c, Math.round((255 * a) / (S * S)));
    }
    rows.push(...row);
  }
  const crcTable = Array.from({ length: 256 }, (_, k) => { let c = k; for (let i = 0; i < 8; i++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1; return c >>> 0; });
  const crc = (buf) => { let c = ~0; for (const b of buf) c = crcTable[(c ^ b) & 255] ^ (c >>> 8); return (~c) >>> 0; };
  const chunk = (type, data) => {
    const len = Buffer.alloc(4); len.writeUInt32BE(data.length);
    const td = Buffer.concat([Buffer.from(type), data]);
    const c = Buffer.alloc(4); c.writeUInt32BE(crc(td));
    return Buffer.concat([len, td, c]);
  };
  const ihdr = Buffer.alloc(13); ihdr.writeUInt32BE(n, 0); ihdr.writeUInt32BE(n, 4); ihdr.set([8, 6, 0, 0, 0], 8);
  return Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]), chunk('IHDR', ihdr), chunk('IDAT', deflateSync(Buffer.from(rows))), chunk('IEND', Buffer.alloc(0))]);
}
for (const n of [16, 32, 48, 128]) writeFileSync(`${process.argv[2]}/icon${n}.png`, png(n));
