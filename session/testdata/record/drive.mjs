// Drive one pi process in RPC mode through a scenario's steps and print the
// session file path it wrote.
//
// usage: node drive.mjs <scenario.json> -- <pi command and arguments...>
//
// Steps (scenario "steps"):
//   {"prompt": "text", "images": [...]}   prompt; waits for agent_settled when a run starts
//   {"command": "/rec-tree user~1", "await": "rec-tree done"}   extension command; waits for its notify
//   {"bash": "echo hi", "exclude": false} RPC bash (a bashExecution message)
//   {"model": "faux-2"}                   set_model
//   {"thinking": "high"}                  set_thinking_level
//   {"name": "session name"}              set_session_name
//   {"compact": "instructions"}           RPC compact (pi's own LLM compaction)
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";

const [scenarioPath, sep, cmd, ...args] = process.argv.slice(2);
if (sep !== "--" || !cmd) {
	console.error("usage: node drive.mjs <scenario.json> -- <pi> [args...]");
	process.exit(2);
}
const scenario = JSON.parse(readFileSync(scenarioPath, "utf8"));
const pi = spawn(cmd, [...args, "--mode", "rpc"], { stdio: ["pipe", "pipe", "inherit"] });

const waiters = [];
let buffered = "";
pi.stdout.setEncoding("utf8");
pi.stdout.on("data", (chunk) => {
	buffered += chunk;
	let nl;
	while ((nl = buffered.indexOf("\n")) >= 0) {
		const line = buffered.slice(0, nl).replace(/\r$/, "");
		buffered = buffered.slice(nl + 1);
		if (!line.trim()) continue;
		const record = JSON.parse(line);
		if (record.type === "response" && record.success === false) {
			console.error(`drive: ${record.command} failed: ${record.error}`);
			process.exit(1);
		}
		for (let i = 0; i < waiters.length; i++) {
			if (waiters[i].match(record)) {
				const [w] = waiters.splice(i, 1);
				w.resolve(record);
				break;
			}
		}
	}
});

// waitFor resolves with the first record that matches; cancel() forgets it.
function waitFor(match, what) {
	let waiter;
	const promise = new Promise((resolve, reject) => {
		const timer = setTimeout(() => reject(new Error(`drive: timed out waiting for ${what}`)), 60000);
		waiter = {
			match,
			resolve: (r) => {
				clearTimeout(timer);
				resolve(r);
			},
			cancel: () => clearTimeout(timer),
		};
		waiters.push(waiter);
	});
	promise.cancel = () => {
		waiter.cancel();
		const i = waiters.indexOf(waiter);
		if (i >= 0) waiters.splice(i, 1);
	};
	return promise;
}

let nextId = 0;
async function send(command) {
	const id = `d${nextId++}`;
	const response = waitFor((r) => r.type === "response" && r.id === id, `response to ${command.type}`);
	pi.stdin.write(`${JSON.stringify({ id, ...command })}\n`);
	return response;
}

async function run() {
	for (const step of scenario.steps) {
		if (step.prompt !== undefined || step.command !== undefined) {
			const settled = waitFor((r) => r.type === "agent_settled", "agent_settled");
			const notified = step.await
				? waitFor((r) => r.type === "extension_ui_request" && r.message === step.await, step.await)
				: undefined;
			const message = step.prompt ?? step.command;
			const response = await send({ type: "prompt", message, ...(step.images ? { images: step.images } : {}) });
			if (notified) await notified;
			if (response.data?.disposition === "started") await settled;
			else settled.cancel();
		} else if (step.bash !== undefined) {
			await send({ type: "bash", command: step.bash, ...(step.exclude ? { excludeFromContext: true } : {}) });
		} else if (step.model !== undefined) {
			await send({ type: "set_model", provider: "faux", modelId: step.model });
		} else if (step.thinking !== undefined) {
			await send({ type: "set_thinking_level", level: step.thinking });
		} else if (step.compact !== undefined) {
			await send({ type: "compact", customInstructions: step.compact });
		} else if (step.name !== undefined) {
			await send({ type: "set_session_name", name: step.name });
		} else {
			throw new Error(`drive: unknown step ${JSON.stringify(step)}`);
		}
	}
	const state = await send({ type: "get_state" });
	process.stdout.write(`${state.data.sessionFile}\n`);
	pi.stdin.end();
}

pi.on("exit", (code) => {
	if (code !== 0) {
		console.error(`drive: pi exited with ${code}`);
		process.exit(1);
	}
});
run().catch((err) => {
	console.error(err.message);
	pi.kill();
	process.exit(1);
});
