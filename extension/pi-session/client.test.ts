import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { after, test } from "node:test";
import { Client, Code, EngineError, human, Notices, PROTOCOL, StuckError, type State } from "./client.ts";
import { Decoder, encode, type Frame, type Message } from "./frames.ts";

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

// pausable is a fakeHost that can stop answering (as a host stopped with
// SIGSTOP, or blocked on a slow disk, would: the kernel still accepts its
// connections and queues what is sent) and answer again later. test.slow
// answers after 100 ms.
function pausable(sock: string) {
	const seen: Frame[] = [];
	const conns = new Set<net.Socket>();
	let paused = false;
	const queued: { c: net.Socket; f: Frame; at: number }[] = [];
	const answer = (c: net.Socket, f: Frame) => {
		const { id, method, params } = f.msg;
		if (id === undefined || c.destroyed) return;
		const reply = (m: Message) => !c.destroyed && c.write(Buffer.concat(encode(m)));
		if (method === "hello") reply({ id, result: { protocol: PROTOCOL, version: "test", host: "serve", pid: 1, limits: { maxMessage: 1 << 20, maxBulk: 1 << 20, maxTimeoutMs: 60000 }, hooks: {}, methods: [] } });
		else if (method === "test.never") return;
		else if (method === "test.slow") setTimeout(() => reply({ id, result: { slow: true } }), 100);
		else reply({ id, result: params ?? {} });
	};
	const server = net.createServer((c) => {
		conns.add(c);
		c.on("close", () => conns.delete(c));
		c.on("error", () => {});
		const d = new Decoder();
		c.on("data", (chunk) => {
			for (const f of d.push(chunk)) {
				seen.push(f);
				if (paused) queued.push({ c, f, at: Date.now() });
				else answer(c, f);
			}
		});
	});
	return {
		path: sock,
		seen,
		queued,
		listen: () => new Promise<void>((r) => server.listen(sock, r)),
		pause: () => void (paused = true),
		// resume answers everything that queued up, late.
		resume: () => {
			paused = false;
			for (const q of queued.splice(0)) answer(q.c, q.f);
		},
		stop: () =>
			new Promise<void>((r) => {
				for (const c of conns) c.destroy();
				if (!server.listening) return r();
				server.close(() => r());
			}),
	};
}

const methods = (seen: Frame[]) => seen.map((f) => f.msg.method).filter((m) => m !== undefined);

test("a host that stops answering is left for a fresh one, once, and its late answers are dropped", async (t) => {
	const sockA = tmpSocket();
	const sockB = tmpSocket();
	const a = pausable(sockA);
	const b = pausable(sockB);
	await a.listen();
	t.after(() => a.stop());
	await b.listen();
	t.after(() => b.stop());
	const stuck: string[] = [];
	const notices = new Notices();
	const told: string[] = [];
	const c = new Client({
		connect: async () => (stuck.includes(sockA) ? sockB : sockA),
		hosts: { stuck: (s) => stuck.push(s) },
		hello,
		probeMs: 100,
		graceMs: 20,
		backoffMs: 10,
		onState: (s, e) => {
			const t = notices.state(s, e);
			if (t) told.push(t);
		},
		onLate: (l, n) => {
			const t = notices.late(l, n);
			if (t) told.push(t);
		},
	});
	c.start();
	t.after(() => c.close());
	await c.ready();
	assert.deepEqual((await c.call("test.echo", { n: 1 })).result, { n: 1 });

	a.pause();
	let settled = 0;
	const first = c.call("test.effect", { n: 2 }, { timeoutMs: 50 }).then(
		() => ((settled += 1), "answered"),
		(e: EngineError) => ((settled += 1), e),
	);
	const err = await first;
	assert.ok(err instanceof EngineError && err.code === Code.Deadline, `the first call waits out its deadline: ${err}`);
	// While the ping is out, a call waits a moment, then fails at once.
	await assert.rejects(c.call("test.echo", { n: 3 }, { timeoutMs: 5000 }), (e: EngineError) => e.code === Code.Unavailable);
	await until(() => c.state === "connected" && c.socket === sockB, "moves to the fresh host");
	assert.deepEqual(stuck, [sockA]);
	assert.equal(c.stats.stuck, 1);
	assert.equal(c.stats.waited, 1, "one call waited out its deadline");
	assert.deepEqual((await c.call("test.echo", { n: 4 })).result, { n: 4 });
	assert.deepEqual(methods(a.seen), ["hello", "test.echo", "test.effect", "rpc.cancel", "ping"], "nothing but the late call and the ping reached the stuck host");
	for (const q of a.queued.filter((q) => q.f.msg.method === "test.effect")) {
		assert.ok((q.f.msg as any).deadline <= Date.now(), "the late call carries a deadline the host can see has passed");
	}

	a.resume(); // its late answers go nowhere
	await new Promise((r) => setTimeout(r, 50));
	assert.equal(settled, 1, "the late call settled once");
	assert.equal(told.length, 1, `one notice: ${JSON.stringify(told)}`);
	assert.match(told[0], /stopped answering: test\.effect got no answer within 50 ms, nor a ping within 100 ms; pi continues without it/);
	await c.close();
	await a.stop();
	await b.stop();
});

test("a long call on a host that stops answering ends with the host, not its deadline", async (t) => {
	const sock = tmpSocket();
	const h = pausable(sock);
	await h.listen();
	t.after(() => h.stop());
	const c = new Client({ connect: async () => sock, hello, probeMs: 100, probeAfterMs: 50, backoffMs: 1000 });
	c.start();
	t.after(() => c.close());
	await c.ready();
	// A slow call on a host that answers pings is left alone.
	assert.deepEqual((await c.call("test.slow", {}, { timeoutMs: 10_000 })).result, { slow: true });
	assert.equal(c.stats.stuck, 0);
	await until(() => c.state === "connected", "connected");
	for (let i = 0; i < 200 && !(await c.ready(0)); i++) await new Promise((r) => setTimeout(r, 5)); // no ping in flight
	h.pause();
	await assert.rejects(c.call("test.effect", {}, { timeoutMs: 10_000 }), (e: EngineError) => e.code === Code.Unavailable && /stopped answering: a ping got no answer/.test(e.message));
	assert.equal(c.stats.stuck, 1);
	assert.equal(c.stats.waited, 0, "it did not wait out its 10 s");
	await c.close();
	await h.stop();
});

test("an engine that is slow on a host that answers: fail open, one notice, its calls held back, others go on", async (t) => {
	const sock = tmpSocket();
	const h = pausable(sock);
	await h.listen();
	t.after(() => h.stop());
	let now = 0;
	const notices = new Notices(60_000, () => now);
	const told: string[] = [];
	const c = new Client({
		connect: async () => sock,
		hello,
		slowMs: 100,
		onLate: (l, n) => {
			const text = notices.late(l, n);
			if (text) told.push(text);
		},
	});
	c.start();
	t.after(() => c.close());
	await c.ready();
	await assert.rejects(c.call("test.never", {}, { timeoutMs: 30 }), (e: EngineError) => e.code === Code.Deadline);
	await until(() => told.length === 1, "told once the host answered the ping");
	assert.match(told[0], /test\.never did not answer within 30 ms; pi went on without its answer/);
	// Its engine's calls go on without it at once; another engine's are answered.
	await assert.rejects(c.call("test.echo", {}, { timeoutMs: 5000 }), (e: EngineError) => e.code === Code.Unavailable && /the test engine is slow/.test(e.message));
	assert.deepEqual((await c.call("other.echo", { n: 1 })).result, { n: 1 });
	assert.ok(!h.seen.some((f) => f.msg.method === "test.echo"), "nothing was sent to the slow engine");
	// After slowMs one call is tried; while it waits the others go on; it
	// waits out its deadline too, and the engine is held back twice as long.
	await new Promise((r) => setTimeout(r, 120));
	const trial = c.call("test.never", {}, { timeoutMs: 30 });
	await assert.rejects(c.call("test.echo", {}), (e: EngineError) => e.code === Code.Unavailable);
	await assert.rejects(trial, (e: EngineError) => e.code === Code.Deadline);
	await assert.rejects(c.call("test.echo", {}), (e: EngineError) => e.code === Code.Unavailable, "held back again, 200 ms now");
	await new Promise((r) => setTimeout(r, 220));
	assert.deepEqual((await c.call("test.echo", { back: true })).result, { back: true }, "answered in time: the engine is back");
	assert.deepEqual((await c.call("test.echo", { again: true })).result, { again: true });
	assert.equal(c.state, "connected");
	assert.equal(c.stats.stuck, 0);
	assert.equal(c.stats.waited, 2);
	assert.equal(told.length, 1, `told once: ${JSON.stringify(told)}`);
	now += 60_000;
	await assert.rejects(c.call("test.never", {}, { timeoutMs: 30 }));
	await until(() => told.length === 2, "told again after the quiet time");
});

test("a call whose deadline passed before it was sent is not sent", async (t) => {
	const sock = tmpSocket();
	const h = pausable(sock);
	await h.listen();
	t.after(() => h.stop());
	const c = new Client({ connect: async () => sock, hello });
	c.start();
	t.after(() => c.close());
	await c.ready();
	await assert.rejects(c.call("test.echo", { late: true }, { deadline: Date.now() - 1 }), (e: EngineError) => e.code === Code.Deadline && /not sent/.test(e.message));
	const a = await c.call("test.echo", {}, { timeoutMs: 60_000, deadline: Date.now() + 5000 });
	assert.ok(a.result);
	const sent = h.seen.filter((f) => f.msg.method === "test.echo");
	assert.equal(sent.length, 1, "only the call in time was sent");
	assert.ok((sent[0].msg.timeoutMs ?? 0) <= 5000, `the nearer deadline counts: ${sent[0].msg.timeoutMs}`);
	assert.equal(c.stats.skipped, 1);
	await c.close();
	await h.stop();
});

test("a host that accepts but never says hello is stuck", async (t) => {
	const sock = tmpSocket();
	const h = pausable(sock);
	await h.listen();
	t.after(() => h.stop());
	h.pause();
	const stuck: string[] = [];
	let err: Error | undefined;
	const c = new Client({ connect: async () => sock, hello, helloTimeoutMs: 50, backoffMs: 10_000, hosts: { stuck: (s) => stuck.push(s) }, onState: (s, e) => s === "down" && (err = e) });
	c.start();
	t.after(() => c.close());
	assert.equal(await c.ready(), false);
	await until(() => err !== undefined, "down");
	assert.ok(err instanceof StuckError, String(err));
	assert.match(err!.message, /did not answer hello within 50 ms/);
	assert.deepEqual(stuck, [sock]);
	await c.close();
	await h.stop();
});

test("back to the better host when it answers; calls in flight finish where they are", async (t) => {
	const primary = tmpSocket();
	const fallback = tmpSocket();
	const p = pausable(primary);
	const f = pausable(fallback);
	await p.listen();
	t.after(() => p.stop());
	await f.listen();
	t.after(() => f.stop());
	p.pause(); // the wrapper's host, stopped
	const marked = new Set<string>([primary]);
	const events: string[] = [];
	const c = new Client({
		connect: async () => (marked.has(primary) ? fallback : primary),
		hello,
		helloTimeoutMs: 50,
		betterMs: 30,
		hosts: {
			stuck: (s) => (marked.add(s), events.push("stuck " + (s === primary ? "primary" : "fallback"))),
			found: (s) => (marked.delete(s), events.push("found " + (s === primary ? "primary" : "fallback"))),
			retired: (s) => events.push("retired " + (s === primary ? "primary" : "fallback")),
			better: (s) => (s === primary ? undefined : primary),
		},
	});
	c.start();
	t.after(() => c.close());
	await c.ready();
	assert.equal(c.socket, fallback);
	await until(() => events.includes("stuck primary"), "tries the stopped primary, which does not answer hello");
	const inFlight = c.call("test.slow", {}, { timeoutMs: 5000 });
	p.resume();
	await until(() => c.socket === primary, "back on the primary");
	assert.deepEqual((await inFlight).result, { slow: true }, "the call on the fallback finished there");
	await until(() => events.includes("retired fallback"), "the fallback is retired once its call is done");
	await c.call("test.echo", { on: "primary" });
	assert.ok(p.seen.some((x) => x.msg.method === "test.echo"));
	assert.ok(!f.seen.some((x) => x.msg.method === "test.echo"));
	assert.equal(c.state, "connected");
	await c.close();
	await p.stop();
	await f.stop();
});

test("notices: one per outage, whatever the host; late answers not during one, nor right after it", () => {
	let now = 0;
	const n = new Notices(1000, () => now);
	const told = [
		n.state("connecting"),
		n.state("down", new Error("connect x: ENOENT")),
		n.state("connecting"),
		n.state("down", new Error("connect x: ENOENT")),
		n.late({ method: "m", timeoutMs: 250, at: 0 }, 1),
		n.state("connected"),
		n.state("down", new StuckError("the engine host (wrapper, pid 7) stopped answering: a ping got no answer within 1 s")),
		n.state("connected"),
	].filter((t) => t !== undefined);
	assert.deepEqual(told, [
		"pi-session: engine unreachable (connect x: ENOENT); pi continues without it and reconnects by itself",
		"pi-session: the engine host (wrapper, pid 7) stopped answering: a ping got no answer within 1 s; pi continues without it, and the extension moves to a fresh engine host",
	]);
	assert.equal(n.late({ method: "m", timeoutMs: 250, at: 0 }, 1), undefined, "a fresh host slow at first is part of the outage told");
	now = 1000;
	assert.match(n.late({ method: "m", timeoutMs: 250, at: 0 }, 2) ?? "", /^pi-session: m did not answer within 250 ms \(and 1 more call\); pi went on without its answer/);
	assert.equal(human(250), "250 ms");
	assert.equal(human(1500), "1.5 s");
	assert.equal(human(300_000), "5 min");
});

test("the race, looped: a host stops at any moment of a burst of calls; each call settles once, one notice a round", async (t) => {
	const rounds = 20;
	const hosts = Array.from({ length: rounds + 1 }, () => pausable(tmpSocket()));
	for (const h of hosts) await h.listen();
	t.after(() => Promise.all(hosts.map((h) => h.stop())));
	let cur = 0;
	const notices = new Notices();
	const told: string[] = [];
	const c = new Client({
		connect: async () => hosts[cur].path,
		hosts: { stuck: () => void cur++ },
		hello,
		probeMs: 60,
		graceMs: 10,
		backoffMs: 5,
		onState: (s, e) => {
			const text = notices.state(s, e);
			if (text) told.push(text);
		},
	});
	c.start();
	t.after(() => c.close());
	await c.ready();
	for (let r = 0; r < rounds; r++) {
		const settled = new Map<number, number>();
		const calls: Promise<unknown>[] = [];
		for (let i = 0; i < 8; i++) {
			calls.push(
				c.call("test.echo", { i }, { timeoutMs: 40 }).then(
					() => settled.set(i, (settled.get(i) ?? 0) + 1),
					() => settled.set(i, (settled.get(i) ?? 0) + 1),
				),
			);
			if (i === r % 8) hosts[r].pause();
			await new Promise((res) => setTimeout(res, Math.floor(Math.random() * 4)));
		}
		await Promise.all(calls);
		await until(() => c.state === "connected" && cur === r + 1, `round ${r}: on the next host`);
		hosts[r].resume(); // late answers, to nobody
		await new Promise((res) => setImmediate(res));
		assert.deepEqual([...settled.values()], Array(8).fill(1), `round ${r}: every call settled exactly once`);
		assert.equal(told.length, r + 1, `round ${r}: one notice a round: ${JSON.stringify(told)}`);
		assert.deepEqual((await c.call("test.echo", { r })).result, { r });
	}
	assert.equal(c.stats.stuck, rounds);
});
