import assert from "node:assert/strict";
import { test } from "node:test";
import { Arbiter } from "./arbiter.ts";
import { cacheTtlMs, EXPIRY_MARGIN_MS, expiryDelay, fingerprint, keepRecentTokens, kTokens, MARKER, merge, nothingToCompact, registerRelay, RESEND_ENTRY } from "./relay.ts";

test("the cache lifetime is known only from a declaration or Anthropic", () => {
	const declared = { promptCache: { short: 300, long: 3600 }, api: "openai-responses" };
	assert.equal(cacheTtlMs(declared, { cacheWrite1h: 0 }, {}), 300_000);
	assert.equal(cacheTtlMs(declared, { cacheWrite1h: 12 }, {}), 3_600_000);
	assert.equal(cacheTtlMs(declared, {}, { PI_CACHE_RETENTION: "long" }), 3_600_000);
	assert.equal(cacheTtlMs({ promptCache: { short: 22 } }, {}, { PI_CACHE_RETENTION: "long" }), 22_000); // no long tier: short
	assert.equal(cacheTtlMs({ api: "anthropic-messages" }, { cacheWrite1h: 5 }, {}), 3_600_000);
	assert.equal(cacheTtlMs({ api: "anthropic-messages" }, { cacheWrite1h: 0 }, {}), 300_000);
	assert.equal(cacheTtlMs({ api: "openai-completions" }, {}, {}), undefined); // best effort: no timer
	assert.equal(cacheTtlMs({ api: "deepseek" }, { cacheRead: 100 }, {}), undefined);
	assert.equal(cacheTtlMs(undefined, {}, {}), undefined);
});

test("the relay waits until 20 s before expiry, and only with cache activity", () => {
	const usage = { cacheRead: 10, cacheWrite: 0 };
	assert.equal(expiryDelay(1000, 60_000, usage, 1000), 60_000 - EXPIRY_MARGIN_MS);
	assert.equal(expiryDelay(1000, 60_000, usage, 50_000), undefined); // already inside the margin
	assert.equal(expiryDelay(1000, 60_000, { cacheRead: 0, cacheWrite: 0 }, 1000), undefined);
	assert.equal(expiryDelay(1000, undefined, usage, 1000), undefined);
	assert.equal(expiryDelay(undefined, 60_000, usage, 1000), undefined);
});

test("held inputs merge in order, blank-line separated, images kept", () => {
	const a = { type: "image", data: "A", mimeType: "image/png" };
	const b = { type: "image", data: "B", mimeType: "image/png" };
	assert.deepEqual(merge([{ text: "one", images: [a] }, { text: "two" }, { text: "three", images: [b] }]), { text: "one\n\ntwo\n\nthree", images: [a, b] });
	assert.deepEqual(fingerprint({ text: "abc" }), { sha256: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", chars: 3, images: 0 });
	assert.equal(kTokens(152340), "152k");
	assert.equal(kTokens(900), "900");
});

// fakePi records what registerRelay registers and lets a test fire events.
function fakePi() {
	const handlers: Record<string, Function[]> = {};
	const commands: Record<string, any> = {};
	const tools: Record<string, any> = {};
	const entries: any[] = [];
	const sent: any[] = [];
	return {
		handlers,
		commands,
		tools,
		entries,
		sent,
		pi: {
			on: (name: string, fn: Function) => void (handlers[name] ??= []).push(fn),
			registerCommand: (name: string, c: any) => void (commands[name] = c),
			registerTool: (t: any) => void (tools[t.name] = t),
			appendEntry: (customType: string, data: any) => void entries.push({ customType, data }),
			sendUserMessage: (content: any) => void sent.push(content),
		} as any,
		async fire(name: string, event: any, ctx: any) {
			for (const fn of handlers[name] ?? []) await fn(event, ctx);
		},
	};
}

function fakeCtx(over: any = {}) {
	const ui = { editor: "draft", notes: [] as string[], levels: [] as string[], notify: (m: string, l?: string) => void (ui.notes.push(m), ui.levels.push(l ?? "info")), setEditorText: (t: string) => void (ui.editor = t), getEditorText: () => ui.editor };
	let compactOpts: any;
	const ctx: any = {
		hasUI: true,
		ui,
		isIdle: () => true,
		hasPendingMessages: () => false,
		getContextUsage: () => ({ tokens: 200_000 }),
		sessionManager: { getLeafId: () => "leaf", getLeafEntry: () => undefined, getBranch: () => [] },
		compact: (o: any) => void (compactOpts = o),
		...over,
	};
	return { ctx, ui, compact: () => compactOpts };
}

function fakeKit(arbiter: Arbiter) {
	const calls: any[] = [];
	return {
		calls,
		kit: {
			arbiter,
			hello: () => ({ role: "main", subagent: false, headless: false, mode: "rpc" }),
			ask: async (method: string, params: any) => {
				calls.push({ method, params });
				if (method === "relay.config") return { result: { config: { auto: { inputMinTokens: 1000 } }, warnings: [] } };
				return { result: {} };
			},
			call: async (method: string, params: any) => {
				calls.push({ method, params });
				return { result: { summary: "note", firstKeptEntryId: "k", tokensBefore: 200_000, noteChars: 4, details: { relay: true, version: 1, notePath: "/nonexistent/1.md" } } };
			},
			ready: async () => true,
			say: () => {},
		} as any,
	};
}

// setup registers the relay with fakes and starts the session.
async function setup(hello?: any) {
	const f = fakePi();
	const arbiter = new Arbiter();
	const k = fakeKit(arbiter);
	if (hello) k.kit.hello = () => hello;
	registerRelay(f.pi, k.kit);
	const c = fakeCtx();
	await f.fire("session_start", {}, c.ctx);
	return { f, arbiter, k, c };
}

test("a session switch during trigger A's relay puts the held text back in the editor", async () => {
	const { f, arbiter, c } = await setup();
	const answer = await arbiter.input({ text: "hold me", source: "rpc", images: [{ type: "image", data: "x", mimeType: "image/png" }] }, c.ctx);
	assert.deepEqual(answer, { action: "handled" });
	await new Promise((r) => setImmediate(r));
	const opts = c.compact();
	assert.ok(opts.customInstructions.startsWith(MARKER), "the relay compacts with its marker");
	// The session switches before the relay completes.
	await f.fire("session_before_switch", {}, c.ctx);
	opts.onComplete({ tokensBefore: 200_000, estimatedTokensAfter: 9000 });
	await new Promise((r) => setImmediate(r));
	assert.equal(f.sent.length, 0, "nothing is sent to the new session");
	assert.equal(c.ui.editor, "draft\n\nhold me");
	assert.ok(c.ui.notes.some((n) => n.includes("re-attach 1 image")), c.ui.notes.join("\n"));
	assert.equal(arbiter.busy(), undefined, "the work slot is released");
});

test("a held text survives the reload of a session switch: the new session's instance puts it back", async () => {
	// pi reloads extensions at a switch, and the old instance's context then
	// throws when used (it ended pi, uncaught in the relay's callback). The
	// relay completes before and after the new instance has started.
	for (const late of [false, true]) {
		const { f, arbiter, c } = await setup();
		await arbiter.input({ text: "hold me " + late, source: "rpc" }, c.ctx);
		await new Promise((r) => setImmediate(r));
		const opts = c.compact();
		await f.fire("session_before_switch", {}, c.ctx);
		await f.fire("session_shutdown", {}, c.ctx);
		const stale = () => {
			throw new Error("This extension ctx is stale after session replacement or reload.");
		};
		Object.defineProperty(c.ctx, "hasUI", { get: stale });
		c.ctx.ui = new Proxy({}, { get: stale });
		const next = fakePi();
		const nextArbiter = new Arbiter();
		registerRelay(next.pi, fakeKit(nextArbiter).kit);
		const nc = fakeCtx();
		if (late) await next.fire("session_start", {}, nc.ctx);
		opts.onComplete({ tokensBefore: 200_000, estimatedTokensAfter: 9000 });
		await new Promise((r) => setImmediate(r));
		if (!late) await next.fire("session_start", {}, nc.ctx);
		assert.equal(f.sent.length + next.sent.length, 0, "nothing is sent");
		assert.equal(nc.ui.editor, "draft\n\nhold me " + late, `late ${late}`);
		assert.ok(nc.ui.notes.some((n) => n.includes("it is back in the editor")), nc.ui.notes.join("\n"));
		await next.fire("session_shutdown", {}, nc.ctx);
	}
});

test("trigger A resends once after an audit entry, even when the relay fails", async () => {
	for (const ok of [true, false]) {
		const f = fakePi();
		const arbiter = new Arbiter();
		const k = fakeKit(arbiter);
		registerRelay(f.pi, k.kit);
		const c = fakeCtx();
		await f.fire("session_start", {}, c.ctx);
		await arbiter.input({ text: "first", source: "interactive" }, c.ctx);
		// More input while the relay runs joins the held message.
		assert.deepEqual(await arbiter.input({ text: "second", source: "interactive" }, c.ctx), { action: "handled" });
		await new Promise((r) => setImmediate(r));
		const opts = c.compact();
		if (ok) opts.onComplete({ tokensBefore: 200_000, estimatedTokensAfter: 9000 });
		else opts.onError(new Error("Compaction cancelled"));
		await new Promise((r) => setImmediate(r));
		assert.deepEqual(f.sent, ["first\n\nsecond"]);
		assert.equal(f.entries.length, 1);
		assert.equal(f.entries[0].customType, RESEND_ENTRY);
		assert.deepEqual(f.entries[0].data.items.map((i: any) => i.chars), [5, 6]);
		assert.ok(c.ui.notes.some((n) => n.includes(ok ? "auto relay (new message) 200k → ~9k" : "failed: Compaction cancelled; your message is sent as it was")), c.ui.notes.join("\n"));
	}
});

test("input below the threshold, commands, extension input and streaming input pass", async () => {
	const { arbiter, c } = await setup();
	assert.equal(await arbiter.input({ text: "/relay", source: "interactive" }, c.ctx), undefined);
	assert.equal(await arbiter.input({ text: "x", source: "extension" }, c.ctx), undefined);
	assert.equal(await arbiter.input({ text: "x", source: "rpc", streamingBehavior: "steer" }, c.ctx), undefined);
	const small = fakeCtx({ getContextUsage: () => ({ tokens: 10 }) });
	assert.equal(await arbiter.input({ text: "x", source: "rpc" }, small.ctx), undefined);
	const unknown = fakeCtx({ getContextUsage: () => ({ tokens: null }) });
	assert.equal(await arbiter.input({ text: "x", source: "rpc" }, unknown.ctx), undefined);
});

test("the relay answers only compactions with its own marker and token", async () => {
	const { arbiter, c } = await setup();
	assert.equal(await arbiter.compact({ customInstructions: "focus on tests", preparation: {} }, c.ctx), undefined);
	assert.equal(await arbiter.compact({ preparation: {} }, c.ctx), undefined);
	assert.deepEqual(await arbiter.compact({ customInstructions: MARKER + "stale", preparation: {} }, c.ctx), { cancel: true });
});

test("nothing is registered in a subagent or headless session", async () => {
	for (const hello of [
		{ role: "main", subagent: true, headless: false },
		{ role: "main", subagent: false, headless: true },
	]) {
		const { f, arbiter } = await setup(hello);
		assert.deepEqual(Object.keys(f.commands), []);
		assert.deepEqual(Object.keys(f.tools), []);
		assert.equal(await arbiter.input({ text: "x", source: "rpc" }, fakeCtx().ctx), undefined);
	}
});

test("no automatic relay until the context grew by minGrowthTokens after a relay", async () => {
	const { arbiter, c } = await setup();
	assert.deepEqual(await arbiter.input({ text: "first", source: "rpc" }, c.ctx), { action: "handled" });
	await new Promise((r) => setImmediate(r));
	c.compact().onComplete({ tokensBefore: 200_000, estimatedTokensAfter: 9000 });
	await new Promise((r) => setImmediate(r));
	// 9000 after the relay; minGrowthTokens is 30000 by default.
	const at = (tokens: number) => fakeCtx({ getContextUsage: () => ({ tokens }) }).ctx;
	assert.equal(await arbiter.input({ text: "x", source: "rpc" }, at(38_000)), undefined, "grown by 29k: no relay");
	assert.deepEqual(await arbiter.input({ text: "y", source: "rpc" }, at(39_000)), { action: "handled" }, "grown by 30k: relay");
});

// expirySetup arms trigger B with a model whose declared cache lives
// ttlSeconds, as if a request just went out.
async function expirySetup(model: any, over: any = {}) {
	const s = await setup();
	Object.assign(s.c.ctx, over);
	const branch = [{ type: "message", message: { role: "assistant", usage: { cacheRead: 100, cacheWrite: 0 }, timestamp: Date.now() } }];
	s.c.ctx.model = model;
	s.c.ctx.sessionManager.getBranch = () => branch;
	await s.f.fire("before_provider_request", {}, s.c.ctx);
	await s.f.fire("agent_settled", {}, s.c.ctx);
	return s;
}

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

test("trigger B relays before a declared cache expires; agent_start, a session switch and shutdown clear its timer", async () => {
	const cache = { promptCache: { short: (EXPIRY_MARGIN_MS + 100) / 1000 }, api: "openai-responses" }; // expires 100 ms after the margin
	const fires = await expirySetup(cache);
	await wait(400);
	assert.ok(fires.c.compact()?.customInstructions?.startsWith(MARKER), "the timer relays");
	for (const event of ["agent_start", "session_before_switch", "session_shutdown"]) {
		const s = await expirySetup(cache);
		await s.f.fire(event, {}, s.c.ctx);
		await wait(400);
		assert.equal(s.c.compact(), undefined, `${event} cleared the timer`);
	}
	// When it fires, it relays only while idle, with nothing queued and a
	// context at expiryMinTokens (140k by default) or more.
	for (const over of [{ isIdle: () => false }, { hasPendingMessages: () => true }, { getContextUsage: () => ({ tokens: 139_000 }) }, { getContextUsage: () => ({ tokens: null }) }]) {
		const s = await expirySetup(cache, over);
		await wait(400);
		assert.equal(s.c.compact(), undefined, `relayed with ${Object.keys(over)[0]}: ${String(Object.values(over)[0])}`);
	}
	// Right after a relay (the branch ends in its compaction) nothing is timed.
	const relayed = await setup();
	relayed.c.ctx.model = cache;
	relayed.c.ctx.sessionManager.getBranch = () => [{ type: "message", message: { role: "assistant", usage: { cacheRead: 100 } } }, { type: "compaction" }];
	await relayed.f.fire("before_provider_request", {}, relayed.c.ctx);
	await relayed.f.fire("agent_settled", {}, relayed.c.ctx);
	await wait(400);
	assert.equal(relayed.c.compact(), undefined, "no relay right after a relay");
	// A lifetime nobody declares (an OpenAI model without promptCache): no timer.
	const unknown = await expirySetup({ api: "openai-completions" });
	await wait(400);
	assert.equal(unknown.c.compact(), undefined, "no relay when the cache lifetime is not known");
	assert.deepEqual(unknown.k.calls.filter((c: any) => c.method === "relay.log"), [], "and nothing logged");
});

test("/relay while pi works says so and does not compact", async () => {
	const { f, c } = await setup();
	const busy = fakeCtx({ isIdle: () => false });
	await f.commands.relay.handler("", busy.ctx);
	assert.equal(busy.compact(), undefined);
	assert.ok(busy.ui.notes.some((n: string) => n.includes("runs while pi is idle")), busy.ui.notes.join("\n"));
	assert.equal(c.compact(), undefined);
});

test("/relay that pi finds nothing to compact in says so plainly, once, and logs the failure", async () => {
	const { f, c, k } = await setup();
	const done = f.commands.relay.handler("", c.ctx);
	c.compact().onError(new Error("Nothing to compact (session too small)"));
	await done;
	assert.deepEqual(c.ui.notes, ["context-relay: nothing to compact yet (Nothing to compact (session too small))"]);
	assert.deepEqual(c.ui.levels, ["info"]);
	const log = k.calls.find((x: any) => x.method === "relay.log");
	assert.deepEqual([log?.params.trigger, log?.params.ok, log?.params.error], ["manual", false, "Nothing to compact (session too small)"]);
	const other = await setup();
	const failed = other.f.commands.relay.handler("", other.c.ctx);
	other.c.compact().onError(new Error("disk full"));
	await failed;
	assert.deepEqual([other.c.ui.notes, other.c.ui.levels], [["context-relay: relay failed: disk full"], ["error"]]);
});

test("/relay with less than pi keeps does not compact: one plain notice instead of pi's error and ours", async () => {
	const text = (chars: number) => ({ role: "user", content: [{ type: "text", text: "x".repeat(chars) }] });
	const entry = (type: string, ...messages: any[]) => ({ sourceEntry: { type }, messages });
	const sm = (projected: any[], branch: any[] = [{ type: "message" }]) => ({
		getLeafId: () => "leaf",
		getLeafEntry: () => undefined,
		getBranch: () => branch,
		buildSessionProjection: () => ({ entries: projected }),
	});
	const cases: [string, any, string][] = [
		["empty", sm([]), "context-relay: nothing to compact yet: the conversation is empty"],
		["small", sm([entry("message", text(4000)), entry("message", { role: "assistant", content: [{ type: "text", text: "y".repeat(400) }] })]), "context-relay: nothing to compact yet: the conversation so far is about 1k tokens, and pi keeps the last 20k as they are (compaction.keepRecentTokens)"],
		["after a compaction", sm([entry("compaction", { role: "compactionSummary", summary: "s".repeat(400_000) }), entry("message", text(40))]), "context-relay: nothing to compact yet: the conversation since the last compaction is about 10 tokens, and pi keeps the last 20k as they are (compaction.keepRecentTokens)"],
		["just compacted", sm([], [{ type: "message" }, { type: "compaction" }]), "context-relay: nothing to compact yet: the context was just compacted and nothing came after"],
		["large enough", sm([entry("message", text(80_000)), entry("message", text(4))]), ""],
		["no projection", { getBranch: () => [] }, ""],
	];
	for (const [name, m, want] of cases) assert.equal(nothingToCompact(m, 20000), want, name);
	assert.equal(keepRecentTokens({ getSettings: () => ({ compaction: { keepRecentTokens: 5 } }) }, { provider: "p", id: "m" }), 5);
	assert.equal(keepRecentTokens({ getSettings: () => ({ compaction: { keepRecentTokens: 5, modelOverrides: { "p/m": { keepRecentTokens: 7 } } } }) }, { provider: "p", id: "m" }), 7);
	assert.equal(keepRecentTokens({ getSettings: () => ({ compaction: { keepRecentTokens: -1 } }) }, undefined), 20000);

	const { f } = await setup();
	const small = fakeCtx({ sessionManager: sm([entry("message", text(40))]) });
	await f.commands.relay.handler("", small.ctx);
	assert.equal(small.compact(), undefined, "no compaction asked for");
	assert.deepEqual([small.ui.notes.length, small.ui.levels], [1, ["info"]]);
	assert.match(small.ui.notes[0], /^context-relay: nothing to compact yet: /);
});

test("a relay log line the engine could not write is shown as the engine says it, once per warning", async () => {
	const { f, c, k } = await setup();
	const ask = k.kit.ask;
	let lost = 0;
	k.kit.ask = async (method: string, params: any) => {
		if (method !== "relay.log") return ask(method, params);
		k.calls.push({ method, params });
		// The engine warns at the first lost line only.
		return ++lost === 1 ? { result: { warning: "the relay log /agent/context-relay/log.jsonl could not be written (no space left on device)" } } : { result: null };
	};
	for (let i = 0; i < 2; i++) {
		const done = f.commands.relay.handler("", c.ctx);
		c.compact().onComplete({ tokensBefore: 200_000, estimatedTokensAfter: 9000 });
		await done;
	}
	const warned = c.ui.notes.filter((n: string) => n.includes("could not be written"));
	assert.deepEqual(warned, ["context-relay: the relay log /agent/context-relay/log.jsonl could not be written (no space left on device)"], c.ui.notes.join("\n"));
	assert.equal(c.ui.notes.filter((n: string) => n.startsWith("context-relay: relayed")).length, 2, "both relays are reported");
});

test('"enabled": false registers nothing: no /relay, no recall, no trigger; /pi-session says so', async () => {
	for (const enabled of [false, true]) {
		const f = fakePi();
		const arbiter = new Arbiter();
		const k = fakeKit(arbiter);
		const reports: (() => Promise<string[]>)[] = [];
		k.kit.report = (rows: () => Promise<string[]>) => void reports.push(rows);
		k.kit.ask = async (method: string) =>
			method === "relay.config" ? { result: { config: { enabled, auto: { inputMinTokens: 1000 } }, warnings: [], path: "/agent/context-relay.json" } } : { result: {} };
		registerRelay(f.pi, k.kit);
		const c = fakeCtx();
		await f.fire("session_start", {}, c.ctx);
		assert.deepEqual([Object.keys(f.commands), Object.keys(f.tools)], enabled ? [["relay"], ["recall"]] : [[], []]);
		assert.deepEqual(await arbiter.input({ text: "x", source: "rpc" }, c.ctx), enabled ? { action: "handled" } : undefined, "trigger A");
		assert.equal((f.handlers.agent_settled ?? []).length, enabled ? 1 : 0, "trigger B's timer is armed at agent_settled");
		const rows = (await reports[0]()).join("\n");
		if (enabled) assert.match(rows, /^ {2}relay {5}on; auto on input >= 1k/);
		else assert.equal(rows, '  relay     off ("enabled": false in /agent/context-relay.json): no /relay, no recall tool, no automatic relays; /pin still pins, and handoffs carry the pins');
	}
});
