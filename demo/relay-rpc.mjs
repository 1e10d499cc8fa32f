// The relay scene of `make demo` outside a terminal: /relay exists only
// in interactive and RPC sessions, so this drives pi-session in RPC mode,
// sends each prompt in turn and prints what a user would see: the
// notifications and the model's answers.
//
// usage: node relay-rpc.mjs <pi-session> [pi args...] -- <prompt>...
import { spawn } from "node:child_process";

const argv = process.argv.slice(2);
const sep = argv.indexOf("--");
const [cmd, ...args] = argv.slice(0, sep);
const prompts = argv.slice(sep + 1);
const pi = spawn(cmd, [...args, "--mode", "rpc"], { stdio: ["pipe", "pipe", "inherit"] });

let buf = "";
const waiters = [];
pi.stdout.setEncoding("utf8");
pi.stdout.on("data", (chunk) => {
	buf += chunk;
	let nl;
	while ((nl = buf.indexOf("\n")) >= 0) {
		const line = buf.slice(0, nl);
		buf = buf.slice(nl + 1);
		if (!line.trim()) continue;
		const r = JSON.parse(line);
		if (r.type === "extension_ui_request" && r.method === "notify") console.log(`  [notice] ${r.message}`);
		if (r.type === "message_end" && r.message?.role === "assistant") {
			const text = (r.message.content ?? []).filter((b) => b.type === "text").map((b) => b.text).join("\n");
			const shown = preview(text, 400);
			if (shown) console.log(shown.replace(/^/gm, "  "));
			for (const b of r.message.content ?? []) if (b.type === "toolCall") console.log(`  [tool call] ${b.name}(${JSON.stringify(b.arguments)})`);
		}
		for (const w of [...waiters]) if (w.match(r)) waiters.splice(waiters.indexOf(w), 1), w.resolve(r);
	}
});
// preview is text cut to about max characters at a line's end (or, in a
// first line longer than that, at a space), never inside a word, with the
// whole length said after it.
function preview(text, max) {
	if (text.length <= max) return text;
	let end = text.lastIndexOf("\n", max);
	if (end <= 0) end = text.lastIndexOf(" ", max);
	if (end <= 0) end = text.search(/\s/);
	if (end <= 0) return text; // one word: shown whole
	return `${text.slice(0, end).trimEnd()}\n… (${text.length} characters in all)`;
}
const wait = (match) => new Promise((resolve) => waiters.push({ match, resolve }));

let id = 0;
for (const p of prompts) {
	console.log(`\n> ${p}`);
	const myId = `d${id++}`;
	const settled = wait((r) => r.type === "agent_settled");
	const response = wait((r) => r.type === "response" && r.id === myId);
	pi.stdin.write(JSON.stringify({ id: myId, type: "prompt", message: p }) + "\n");
	const res = await response;
	if (!res.success) console.log(`  [error] ${res.error}`);
	else if (res.data?.disposition === "started") await settled;
}
pi.stdin.end();
