// What index.ts hands each engine's module: the engine client, the arbiter
// and this session's identity. An engine module is one function,
// register<Engine>(pi, kit), that registers its tools, commands and hooks.
import type { Arbiter } from "./arbiter.ts";
import type { Hello } from "./client.ts";

export type Call = <T>(method: string, params?: unknown, o?: { bulk?: Uint8Array; timeoutMs?: number; signal?: AbortSignal }) => Promise<{ result: T; bulk?: Uint8Array }>;

export type Kit = {
	// call forwards to an engine method and throws an EngineError on failure
	// (for tools, whose errors the model should see).
	call: Call;
	// ask forwards to an engine method and returns undefined on any failure:
	// the caller then keeps pi's default behaviour (for hooks: fail open).
	ask: <T>(method: string, params?: unknown, o?: { bulk?: Uint8Array; timeoutMs?: number; signal?: AbortSignal }) => Promise<{ result: T; bulk?: Uint8Array } | undefined>;
	arbiter: Arbiter;
	// hello is this session's hello (role, mode, subagent, headless), once
	// session_start has run.
	hello: () => Hello | undefined;
	// ready waits up to ms for the engine connection.
	ready: (ms?: number) => Promise<boolean>;
	// say tells the user once: a notification in the TUI, stderr elsewhere
	// (sink.ts's notify: the text written out visibly).
	say: (text: string, level?: "info" | "warning" | "error") => void;
	// report adds rows (already indented) to /pi-session's report.
	report?: (rows: () => Promise<string[]>) => void;
};
