import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { after, test } from "node:test";
import { Client, Code, EngineError, PROTOCOL, type State } from "./client.ts";
import { Decoder, encode, type Frame } from "./frames.ts";

// fakeHost answers like pi-session's host: hello, ping, bye, test.echo
// (params and bulk back), test.never (no answer); it records every message.
function fakeHost(sock: string, protocol = PROTOCOL) {
	const seen: Frame[] = [];
	const conns = new Set<net.Socket>();
	const server = net.createServer((c) => {
		conns.add(c);
		c.on("close", () => conns.delete(c));
		const d = new Decoder();
		c.on("data", (chunk) => {
			for (const f of d.push(chunk)) {
				seen.push(f);
				const { id, method, params } = f.msg;
				if (id === undefined) continue;
				if (method === "hello") c.write(Buffer.concat(encode({ id, result: { protocol, version: "test", host: "serve", limits: { maxMessage: 1024, maxBulk: 4096, maxTimeoutMs: 60000 }, hooks: {}, methods: [] } })));
				else if (method === "test.echo") for (const b of encode({ id, result: params ?? null }, f.bulk)) c.write(b);
				else if (method === "test.never") continue;
				else c.write(Buffer.concat(encode({ id, result: {} })));
			}
		});
	});
	return {
		seen,
		listen: () => new Promise<void>((r) => server.listen(sock, r)),
		stop: () => new Promise<void>((r) => {
			for (const c of conns) c.destroy();
			server.close(() => r());
		}),
	};
}

const dirs: string[] = [];
after(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

function tmpSocket(): string {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pis-"));
	dirs.push(dir);
	return path.join(dir, "h.sock");
}

const hello = () => ({ client: "test", extension: "0", pi: "0", pid: process.pid, sessionId: "s", sessionFile: "", sessionName: "", cwd: "/", role: "main" as const, mode: "print", subagent: false, headless: true });

async function until(cond: () => boolean, what: string) {
	for (let i = 0; i < 500 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
	assert.ok(cond(), what);
}

test("call, bulk, bye", async () => {
	const sock = tmpSocket();
	const host = fakeHost(sock);
	await host.listen();
	const c = new Client({ connect: async () => sock, hello });
	c.start();
	const bulk = Buffer.from("\x00\n{}raw");
	const a = await c.call("test.echo", { x: 1 }, { bulk });
	assert.deepEqual(a.result, { x: 1 });
	assert.ok(a.bulk?.equals(bulk));
	assert.equal(host.seen[0].msg.method, "hello");
	assert.equal((host.seen[0].msg.params as any).protocol, PROTOCOL);
	assert.ok((host.seen[1].msg.timeoutMs ?? 0) > 0, "every call carries its deadline");
	await c.close();
	assert.equal(host.seen.at(-1)?.msg.method, "bye");
	await host.stop();
});

test("fail fast while down, one outage, resume after restart", async () => {
	const sock = tmpSocket();
	const states: State[] = [];
	const c = new Client({ connect: async () => sock, hello, backoffMs: 20, maxBackoffMs: 40, onState: (s) => states.push(s) });
	c.start();
	await until(() => c.state === "down", "down without a host");
	await assert.rejects(c.call("ping", undefined, { timeoutMs: 10_000 }), (e: EngineError) => e.code === Code.Unavailable);
	let host = fakeHost(sock);
	await host.listen();
	await until(() => c.state === "connected", "reconnects when the host appears");
	await c.call("ping");
	await host.stop();
	await until(() => c.state === "down" || c.state === "connecting", "notices the host is gone");
	host = fakeHost(sock);
	fs.rmSync(sock, { force: true });
	await host.listen();
	await until(() => c.state === "connected", "reconnects after a restart");
	assert.deepEqual((await c.call("test.echo", [1])).result, [1]);
	await c.close();
	await host.stop();
	assert.equal(states[0], "connecting");
	assert.ok(states.includes("down"));
	assert.equal(states.at(-1), "closed");
});

test("deadline: the call gives up and cancels", async () => {
	const sock = tmpSocket();
	const host = fakeHost(sock);
	await host.listen();
	const c = new Client({ connect: async () => sock, hello });
	c.start();
	await assert.rejects(c.call("test.never", undefined, { timeoutMs: 30 }), (e: EngineError) => e.code === Code.Deadline);
	await until(() => host.seen.some((f) => f.msg.method === "rpc.cancel"), "rpc.cancel sent");
	assert.equal((await c.call("ping")).result !== undefined, true, "the connection still works");
	await c.close();
	await host.stop();
});

test("limits are checked before sending", async () => {
	const sock = tmpSocket();
	const host = fakeHost(sock);
	await host.listen();
	const c = new Client({ connect: async () => sock, hello });
	c.start();
	await assert.rejects(c.call("test.echo", { s: "x".repeat(2000) }), (e: EngineError) => e.code === Code.TooLarge && /maxMessage/.test(e.message));
	await assert.rejects(c.call("test.echo", {}, { bulk: Buffer.alloc(5000) }), (e: EngineError) => e.code === Code.TooLarge && /maxBulk/.test(e.message));
	assert.ok(!host.seen.some((f) => f.msg.method === "test.echo"), "nothing oversized was sent");
	await c.close();
	await host.stop();
});

test("a host with another protocol is refused", async () => {
	const sock = tmpSocket();
	const host = fakeHost(sock, PROTOCOL + 1);
	await host.listen();
	let err: Error | undefined;
	const c = new Client({ connect: async () => sock, hello, backoffMs: 1000, onState: (s, e) => s === "down" && (err = e) });
	c.start();
	await until(() => err !== undefined, "down after hello");
	assert.match(err!.message, /protocol mismatch/);
	await c.close();
	await host.stop();
});
