// What index.ts hands each engine's module: the engine client, the arbiter
// and this session's identity. An engine module is one function,
// register<Engine>(pi, kit), that registers its tools, commands and hooks.
import type { Arbiter } from "./arbiter.ts";
import type { Hello } from "./client.ts";

// Deadline is how long a call may keep pi waiting, by where it sits. Past
// it pi goes on as if the extension were absent (a hook keeps pi's own
// behaviour, a tool or command says the engine did not answer in time),
// and the user is told once; a host that does not answer a ping then
// either is left for a fresh one (client.ts). Every call names one.
export const Deadline = {
	// hook: a hook pi runs on every turn (input, before_agent_start,
	// tool_call, tool_result, turn_start, turn_end, agent_before_settle,
	// agent_settled, compaction results): its answer comes in well under
	// a millisecond, and pi waits for it each time.
	hook: 250,
	// start: a session's start (configuration, inherited pins), once.
	start: 2_000,
	// background: work nothing waits for (indexing, logs, clean-up).
	background: 2_000,
	// command: a command the user typed and waits for (/ce, /pi-session,
	// /handoff's request), or a recap's preparation.
	command: 10_000,
	// commit: a turn end or settle that commits a handoff or arms the
	// relaunch: it reads the handoff and runs git.
	commit: 30_000,
	// work: /relay's note, recall and ctx_read over a large session or
	// payload: the user or the model asked and waits.
	work: 60_000,
	// handoff: context_handoff writes the handoff with git metadata.
	handoff: 90_000,
} as const;

// toolResultMs is a tool_result call's deadline: a hook's, plus the time
// its text takes to reach the engine and be stored at 50 MB/s (a 100 MB
// result is stored in about 0.4 s).
export function toolResultMs(bytes: number): number {
	return Deadline.hook + Math.ceil(bytes / 50_000);
}

export type CallOptions = { bulk?: Uint8Array; timeoutMs?: number; deadline?: number; signal?: AbortSignal };

export type Call = <T>(method: string, params?: unknown, o?: CallOptions) => Promise<{ result: T; bulk?: Uint8Array }>;

export type Kit = {
	// call forwards to an engine method and throws an EngineError on failure
	// (for tools, whose errors the model should see).
	call: Call;
	// ask forwards to an engine method and returns undefined on any failure:
	// the caller then keeps pi's default behaviour (for hooks: fail open).
	ask: <T>(method: string, params?: unknown, o?: CallOptions) => Promise<{ result: T; bulk?: Uint8Array } | undefined>;
	arbiter: Arbiter;
	// hello is this session's hello (role, mode, subagent, headless), once
	// session_start has run.
	hello: () => Hello | undefined;
	// ready waits up to ms for the first engine connection (never for a
	// reconnection) and says whether the engine answers.
	ready: (ms?: number) => Promise<boolean>;
	// say tells the user once: a notification in the TUI, stderr elsewhere
	// (sink.ts's notify: the text written out visibly).
	say: (text: string, level?: "info" | "warning" | "error") => void;
	// report adds rows (already indented) to /pi-session's report.
	report?: (rows: () => Promise<string[]>) => void;
};
