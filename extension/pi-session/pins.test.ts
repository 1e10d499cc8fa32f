import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { checkPin, CONTINUES, lastUserText, listing, parseUnpin, PIN, registerPins, replay, UNPIN } from "./pins.ts";
import { visible } from "./sink.ts";

// The table Go's pins tests read too (pins/testdata/check.json).
const table = JSON.parse(readFileSync(new URL("../../pins/testdata/check.json", import.meta.url), "utf8"));
const rep = (s: string, n?: number) => (n ? s.repeat(n) : s);

test("checkPin applies the rule of pins.Check (the shared table)", () => {
	assert.ok(table.check.length > 10);
	for (const c of table.check) {
		const got = checkPin(rep(c.in, c.repeat));
		const name = JSON.stringify(c.in).slice(0, 40);
		if (!c.err) {
			assert.deepEqual(got, { text: rep(c.out, c.outRepeat) }, name);
			continue;
		}
		const want = c.err === "control" ? { kind: "control", at: c.at, char: c.char } : c.err === "long" ? { kind: "long", chars: c.chars } : { kind: "empty" };
		assert.deepEqual(got, { bad: want }, name);
	}
});

test("listing is pins.Listing (the shared table)", () => {
	for (const c of table.listing) assert.equal(listing(c.pins), c.out);
	assert.equal(visible("a\u001b[2Jb\u009b"), "a\\x1b[2Jb\\u009b");
});

const custom = (id: string, customType: string, data: any) => ({ type: "custom", id, customType, data });
const user = (id: string, content: any) => ({ type: "message", id, message: { role: "user", content } });

test("replay: pins in order, less the unpinned, repeats and entries that cannot count", () => {
	const branch = [
		user("m1", "hi"),
		custom("p1", PIN, { text: "Never push to main." }),
		custom("p2", PIN, { text: "B" }),
		custom("o1", "other:pin", { text: "not ours" }),
		custom("p3", PIN, { text: "C:\r\nline two  " }),
		custom("u1", UNPIN, { pin: "p2", text: "B" }),
		custom("p4", PIN, { text: "Never push to main." }),
		custom("b1", PIN, { text: "esc \u001b[2J" }),
		custom("b2", PIN, { text: 42 }),
		custom("b3", PIN, "Never"),
		custom("b4", UNPIN, { pin: "p9" }),
		custom("b5", PIN, { text: "x".repeat(2001) }),
	];
	assert.deepEqual(replay(branch), [
		{ entryId: "p1", text: "Never push to main." },
		{ entryId: "p3", text: "C:\nline two" },
	]);
	assert.deepEqual(replay([]), []);
});

test("lastUserText: the last user message, text blocks joined, pi-session's own requests passed over", () => {
	assert.equal(lastUserText([user("a", "first"), { type: "message", message: { role: "assistant", content: [] } }, user("b", [{ type: "text", text: "one" }, { type: "image" }, { type: "text", text: "two" }])]), "one\ntwo");
	assert.equal(lastUserText([user("a", "the rule"), user("b", "[/handoff] Write a context_handoff now")]), "the rule");
	assert.equal(lastUserText([user("a", "the rule"), user("b", "continue from /w/.ai-work/handoffs/s-1.md")]), "the rule");
	assert.equal(lastUserText([user("a", "continue from here, please")]), "continue from here, please");
	assert.equal(lastUserText([custom("p1", PIN, { text: "x" })]), undefined);
});

test("parseUnpin: a number from 1 to the count; anything else says what to type", () => {
	assert.deepEqual(parseUnpin(" 2 ", 3), { n: 2 });
	assert.deepEqual(parseUnpin("1", 1), { n: 1 });
	const err = (a: string, n: number) => (parseUnpin(a, n) as { error: string }).error;
	assert.equal(err("", 3), "/unpin: which pin? /unpin <n> with n from 1 to 3 (/pins lists them)");
	assert.equal(err("", 1), "/unpin: which pin? /unpin <n> with n from 1 (/pins lists them)");
	assert.equal(err("2", 0), "/unpin: this branch has no pins (/pin <rule> pins one)");
	assert.equal(err("abc", 3), '/unpin: "abc" is not a pin number: /unpin <n> with n from 1 to 3 (/pins lists them)');
	assert.equal(err("-1", 3), '/unpin: "-1" is not a pin number: /unpin <n> with n from 1 to 3 (/pins lists them)');
	assert.equal(err("1 2", 3), '/unpin: "1 2" is not a pin number: /unpin <n> with n from 1 to 3 (/pins lists them)');
	assert.equal(err("4", 3), "/unpin: there is no pin 4: this branch has 3 pins (/pins lists them)");
	assert.equal(err("0", 1), "/unpin: there is no pin 0: this branch has 1 pin (/pins lists them)");
	assert.equal(err("99999999999999999999", 2), "/unpin: there is no pin 99999999999999999999: this branch has 2 pins (/pins lists them)");
	assert.equal(err("\u001b[2J", 2), '/unpin: "\\x1b[2J" is not a pin number: /unpin <n> with n from 1 to 2 (/pins lists them)');
});

// fakeSession is pi with a branch that grows by appendEntry, as pi's does.
function fakeSession(branch: any[] = [], kit: any = { hello: () => undefined }) {
	const commands: Record<string, any> = {};
	const handlers: Record<string, Function[]> = {};
	const notes: { text: string; level: string }[] = [];
	let n = 0;
	const pi: any = {
		registerCommand: (name: string, c: any) => void (commands[name] = c),
		on: (name: string, fn: Function) => void (handlers[name] ??= []).push(fn),
		appendEntry: (customType: string, data: any) => void branch.push({ type: "custom", id: `new${++n}`, customType, data }),
	};
	const ctx: any = { hasUI: true, ui: { notify: (text: string, level: string) => void notes.push({ text, level }) }, sessionManager: { getBranch: () => branch } };
	registerPins(pi, kit);
	const run = async (cmd: string, args = "") => {
		notes.length = 0;
		await commands[cmd].handler(args, ctx);
		return notes.map((x) => x.text).join("\n");
	};
	const fire = async (name: string) => {
		for (const fn of handlers[name] ?? []) await fn({}, ctx);
	};
	return { branch, run, fire, notes, commands };
}

test("/pin, /pins and /unpin: what the user sees, and the entries", async () => {
	const s = fakeSession([user("m1", "Use spaces, not tabs.\r\n")]);
	assert.deepEqual(Object.keys(s.commands).sort(), ["pin", "pins", "unpin"]);
	assert.equal(await s.run("pins"), "no pins on this branch: /pin <rule> pins a rule, /pin alone your last message");
	assert.equal(await s.run("pin", "Never push to main."), 'pinned as 1: "Never push to main." (every relay note and handoff carries it; /pins lists the pins)');
	assert.equal(await s.run("pin"), 'pinned as 2: "Use spaces, not tabs." (every relay note and handoff carries it; /pins lists the pins)');
	assert.equal(await s.run("pin", "  Never push to main.  "), '/pin: already pinned as 1: "Never push to main."');
	assert.equal(await s.run("pins"), "2 pins on this branch (verbatim in every relay note and handoff; /unpin <n> removes one):\n  1. Never push to main.\n  2. Use spaces, not tabs.");
	assert.equal(await s.run("unpin", "1"), 'unpinned 1: "Never push to main." (1 pin left)');
	assert.deepEqual(s.branch.slice(1).map((e) => [e.customType, e.data]), [
		[PIN, { text: "Never push to main." }],
		[PIN, { text: "Use spaces, not tabs." }],
		[UNPIN, { pin: "new1", text: "Never push to main." }],
	]);
	assert.equal(await s.run("pins"), "1 pin on this branch (verbatim in every relay note and handoff; /unpin <n> removes one):\n  1. Use spaces, not tabs.");
	assert.equal(await s.run("unpin", "2"), "/unpin: there is no pin 2: this branch has 1 pin (/pins lists them)");
	assert.equal(s.notes[0].level, "warning");
	assert.equal(await s.run("unpin", "1"), 'unpinned 1: "Use spaces, not tabs." (no pins left)');
	assert.equal(await s.run("unpin", "1"), "/unpin: this branch has no pins (/pin <rule> pins one)");
});

test("/pin refuses bad input with an answer that says why, and writes nothing", async () => {
	const s = fakeSession([]);
	assert.equal(await s.run("pin"), "/pin: there is no message of yours on this branch yet; write the rule after /pin");
	assert.equal(await s.run("pin", "clear \u001b[2J the screen"), '/pin: the pin holds a control character (\\x1b at character 7), which could reach the terminal: "clear \\x1b[2J the screen"; write the rule without it');
	assert.equal(await s.run("pin", "é".repeat(2001)), "/pin: the pin is 2001 characters, over the limit of 2000; pin the rule itself, shorter");
	assert.equal(s.notes[0].level, "warning");
	s.branch.push(user("m1", [{ type: "image" }]));
	assert.equal(await s.run("pin"), "/pin: your last message has no text to pin; write the rule after /pin");
	s.branch.push(user("m2", "x".repeat(2500)));
	assert.equal(await s.run("pin"), "/pin: your last message is 2500 characters, over the limit of 2000 for a pin; pin the rule itself with /pin <rule>");
	s.branch.push(user("m3", "bell\u0007"));
	assert.match(await s.run("pin"), /^\/pin: your last message holds a control character \(\\x07 at character 5\)/);
	assert.equal(s.branch.filter((e) => e.type === "custom").length, 0, "nothing was pinned");
	assert.equal(await s.run("pin", "é".repeat(2000)), `pinned as 1: "${"é".repeat(200)}…(2000 chars)" (every relay note and handoff carries it; /pins lists the pins)`);
});

test("a relaunched pi records what it continues from and copies the pins, once", async () => {
	const calls: string[] = [];
	const answer = { sessionFile: "/agent/sessions/old.jsonl", handoff: "/w/.ai-work/handoffs/old-1.md", pins: ["Never push to main.", "esc \u001b", "Never push to main.", "Keep commits small."], from: "session" };
	const kit = {
		hello: () => ({ role: "main", subagent: false }),
		ready: async () => true,
		call: async (method: string) => {
			calls.push(method);
			return { result: answer };
		},
	};
	const saved = process.env.PI_SESSION_SOCKET;
	process.env.PI_SESSION_SOCKET = "/run/pi-session/1.sock";
	try {
		const s = fakeSession([], kit);
		await s.fire("session_start");
		assert.deepEqual(calls, ["pins.inherit"]);
		assert.deepEqual(s.branch.map((e) => [e.customType, e.data]), [
			[CONTINUES, { sessionFile: "/agent/sessions/old.jsonl", handoff: "/w/.ai-work/handoffs/old-1.md" }],
			[PIN, { text: "Never push to main.", from: "/agent/sessions/old.jsonl" }],
			[PIN, { text: "Keep commits small.", from: "/agent/sessions/old.jsonl" }],
		]);
		assert.equal(s.notes.map((n) => n.text).join("\n"), "pi-session: 2 pins carried over from the previous session (/pins lists them)");
		assert.equal(await s.run("pins"), "2 pins on this branch (verbatim in every relay note and handoff; /unpin <n> removes one):\n  1. Never push to main.\n  2. Keep commits small.");
		// The same session again (a reconnection, a reload): nothing twice.
		await s.fire("session_start");
		assert.equal(s.branch.length, 3);
		// A session that continues nothing, a host without pins.inherit, and
		// plain pi (no PI_SESSION_SOCKET) append nothing.
		for (const k of [
			{ ...kit, call: async () => ({ result: { pins: [] } }) },
			{ ...kit, call: async () => Promise.reject(new Error("method not found")) },
		]) {
			const t = fakeSession([], k);
			await t.fire("session_start");
			assert.deepEqual(t.branch, []);
		}
		delete process.env.PI_SESSION_SOCKET;
		const plain = fakeSession([], kit);
		calls.length = 0;
		await plain.fire("session_start");
		assert.deepEqual([plain.branch, calls], [[], []]);
	} finally {
		if (saved === undefined) delete process.env.PI_SESSION_SOCKET;
		else process.env.PI_SESSION_SOCKET = saved;
	}
});
