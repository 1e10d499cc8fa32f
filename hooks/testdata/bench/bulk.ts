// Bulk transfer of a 16 MiB payload from the extension's client into the
// engine host (HOST_SOCKET), several ways, against a raw copy of the same
// bytes over a unix socket (RAW_SOCKET: reads SIZE bytes, answers one
// byte), measured in the same run. Prints MB/s per way (median of ROUNDS,
// 3 for JSON).
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { Client } from "../../../extension/pi-session/client.ts";

const SIZE = Number(process.env.SIZE ?? 16 << 20);
const ROUNDS = Number(process.env.ROUNDS ?? 5);

// Text like a large tool result: lines of code and JSON, quotes, tabs and
// non-ASCII, so that JSON escaping does real work.
function payload(): Buffer {
	const lines = ['\t"name": "pi-session", "path": "C:\\\\tmp\\\\x", "ok": true,', "func main() {\n\tfmt.Println(\"héllo, wörld\")\n}", "2026-11-30T10:00:00Z INFO request id=42 status=200 bytes=1234"];
	const parts: string[] = [];
	let n = 0;
	for (let i = 0; n < SIZE; i++) {
		const l = lines[i % lines.length] + " " + i + "\n";
		parts.push(l);
		n += Buffer.byteLength(l);
	}
	return Buffer.from(parts.join("")).subarray(0, SIZE);
}

// median runs fn rounds times and returns the median time in ms.
function median(ms: number[]): number {
	const s = [...ms].sort((a, b) => a - b);
	return s[Math.floor(s.length / 2)];
}

async function once(fn: () => Promise<void>): Promise<number> {
	const t0 = process.hrtime.bigint();
	await fn();
	return Number(process.hrtime.bigint() - t0) / 1e6;
}

const mbps = (ms: number) => SIZE / (1 << 20) / (ms / 1000);

const data = payload();
const text = data.toString("utf8");

async function raw(): Promise<void> {
	const s = net.createConnection({ path: process.env.RAW_SOCKET! });
	await new Promise<void>((r) => s.once("connect", () => r()));
	await new Promise<void>((r) => {
		s.once("data", () => r());
		s.write(data);
	});
	s.destroy();
}

const c = new Client({
	connect: async () => process.env.HOST_SOCKET!,
	hello: () => ({ client: "bench", extension: "bench", pi: "", pid: process.pid, sessionId: "", sessionFile: "", sessionName: "", cwd: "/", role: "main", mode: "print", subagent: false, headless: true }),
	timeoutMs: 60_000,
});
c.start();
if (!(await c.ready())) throw new Error("not connected: " + c.lastError?.message);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "bulk-"));
let k = 0;
const check = (n: unknown) => {
	if (n !== SIZE) throw new Error(`engine got ${n} bytes, want ${SIZE}`);
};

const bulk = async () => check((await c.call<{ n: number }>("bench.sink", {}, { bulk: data })).result.n);
const json = async () => check((await c.call<{ n: number }>("bench.sinkJSON", { data: text })).result.n);
// A private 0600 file the engine reads, or moves into place unread.
const file = async () => {
	const p = path.join(dir, `f${k++}`);
	fs.writeFileSync(p, data, { mode: 0o600 });
	check((await c.call<{ n: number }>("bench.sinkFile", { path: p })).result.n);
};
const fileRename = async () => {
	const p = path.join(dir, `f${k++}`);
	fs.writeFileSync(p, data, { mode: 0o600 });
	check((await c.call<{ n: number }>("bench.moveFile", { path: p, to: path.join(dir, `stored${k}`) })).result.n);
};
// Interleaved, so that machine noise hits every way alike; JSON is slow
// enough that three rounds tell.
const ways: Record<string, [() => Promise<void>, number]> = { raw: [raw, ROUNDS], bulk: [bulk, ROUNDS], file: [file, ROUNDS], fileRename: [fileRename, ROUNDS], json: [json, 3] };
const times: Record<string, number[]> = {};
for (let r = 0; r < ROUNDS; r++) {
	for (const [name, [fn, rounds]] of Object.entries(ways)) {
		if (r < rounds) (times[name] ??= []).push(await once(fn));
	}
}
const out = Object.fromEntries(Object.entries(times).map(([name, ms]) => [name, mbps(median(ms))]));
await c.close();
fs.rmSync(dir, { recursive: true, force: true });
console.log(JSON.stringify(out));
