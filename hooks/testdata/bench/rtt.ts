// Round trip of a tiny request from the extension's client to the engine
// host (HOST_SOCKET, method bench.nop), against a bare Node-to-Node unix
// socket echo of a line of the same size, measured in the same run.
// Prints {"engine": {...}, "echo": {...}} in microseconds.
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "../../../extension/pi-session/client.ts";

const N = Number(process.env.N ?? 10000) / 2; // per round, two rounds
const WARM = 1000;

function stats(us: number[]) {
	us.sort((a, b) => a - b);
	const at = (q: number) => us[Math.min(us.length - 1, Math.floor(q * us.length))];
	return { n: us.length, p50: at(0.5), p90: at(0.9), p99: at(0.99), max: us[us.length - 1] };
}

async function engine() {
	const c = new Client({
		connect: async () => process.env.HOST_SOCKET!,
		hello: () => ({ client: "bench", extension: "bench", pi: "", pid: process.pid, sessionId: "", sessionFile: "", sessionName: "", cwd: "/", role: "main", mode: "print", subagent: false, headless: true }),
	});
	c.start();
	if (!(await c.ready())) throw new Error("not connected: " + c.lastError?.message);
	const us: number[] = [];
	for (let i = 0; i < WARM + N; i++) {
		const t0 = process.hrtime.bigint();
		await c.call("bench.nop", { i });
		if (i >= WARM) us.push(Number(process.hrtime.bigint() - t0) / 1000);
	}
	await c.close();
	return us;
}

async function echo() {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), "echo-"));
	const sock = path.join(dir, "e.sock");
	const server = spawn(process.execPath, [path.join(path.dirname(fileURLToPath(import.meta.url)), "echo.ts"), sock], { stdio: ["pipe", "pipe", "inherit"] });
	await new Promise<void>((r) => server.stdout!.once("data", () => r()));
	const s = net.createConnection({ path: sock });
	s.setNoDelay(true);
	await new Promise<void>((r) => s.once("connect", () => r()));
	let waiting: (() => void) | undefined;
	let buf = "";
	s.on("data", (d) => {
		buf += d.toString();
		const nl = buf.indexOf("\n");
		if (nl >= 0) {
			buf = buf.slice(nl + 1);
			waiting?.();
		}
	});
	const us: number[] = [];
	for (let i = 0; i < WARM + N; i++) {
		const line = JSON.stringify({ jsonrpc: "2.0", id: i, method: "bench.nop", params: { i }, timeoutMs: 5000 }) + "\n";
		const t0 = process.hrtime.bigint();
		await new Promise<void>((r) => {
			waiting = r;
			s.write(line);
		});
		if (i >= WARM) us.push(Number(process.hrtime.bigint() - t0) / 1000);
	}
	s.destroy();
	server.stdin!.end();
	fs.rmSync(dir, { recursive: true, force: true });
	return us;
}

// Alternate the two, half the calls each time, so that machine noise hits
// both alike.
const e: number[] = [];
const b: number[] = [];
for (let round = 0; round < 2; round++) {
	e.push(...(await engine()));
	b.push(...(await echo()));
}
console.log(JSON.stringify({ engine: stats(e), echo: stats(b) }));
