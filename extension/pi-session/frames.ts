// The wire format of pi-session's engine socket (see hooks/protocol.go):
// one line of JSON per JSON-RPC 2.0 message, optionally followed by exactly
// `bulk` raw bytes. Pure code: no sockets here.

export type Message = {
	jsonrpc: "2.0";
	id?: number | string | null;
	method?: string;
	params?: unknown;
	result?: unknown;
	error?: { code: number; message: string; data?: unknown };
	timeoutMs?: number;
	bulk?: number;
};

export type Frame = { msg: Message; bulk?: Buffer };

const NL = 0x0a;

// encode returns the bytes of one message: the JSON line and the bulk bytes
// that follow it. The id is written first so that a host refusing an
// oversized line can still say which request it refused.
export function encode(msg: Omit<Message, "jsonrpc" | "bulk">, bulk?: Uint8Array): Buffer[] {
	const m: Message = { jsonrpc: "2.0", id: msg.id, ...msg };
	if (bulk && bulk.length > 0) m.bulk = bulk.length;
	const line = Buffer.from(JSON.stringify(m) + "\n", "utf8");
	return bulk && bulk.length > 0 ? [line, Buffer.from(bulk.buffer, bulk.byteOffset, bulk.length)] : [line];
}

// Decoder turns a byte stream into frames, whatever the chunk boundaries.
// Bulk bytes are collected without copying until the last chunk arrives;
// chunks must not be reused by the caller (Node's socket chunks are not).
export class Decoder {
	private parts: Buffer[] = [];
	private partsLen = 0;
	private need = -1; // bulk bytes still missing; -1 while reading a line
	private head: Message | undefined;
	private maxLine: number;

	constructor(maxLine = 64 << 20) {
		this.maxLine = maxLine;
	}

	// push takes the next chunk and returns the frames it completes. It
	// throws on a line that is not JSON or longer than maxLine: the stream
	// cannot be trusted after that.
	push(chunk: Buffer): Frame[] {
		const out: Frame[] = [];
		let pos = 0;
		while (pos < chunk.length) {
			if (this.need >= 0) {
				const take = Math.min(this.need, chunk.length - pos);
				this.parts.push(chunk.subarray(pos, pos + take));
				this.partsLen += take;
				this.need -= take;
				pos += take;
				if (this.need === 0) {
					const bulk = this.parts.length === 1 ? this.parts[0] : Buffer.concat(this.parts, this.partsLen);
					out.push({ msg: this.head!, bulk });
					this.reset();
				}
				continue;
			}
			const nl = chunk.indexOf(NL, pos);
			if (nl < 0) {
				this.parts.push(chunk.subarray(pos));
				this.partsLen += chunk.length - pos;
				if (this.partsLen > this.maxLine) throw new Error(`pi-session: a message line over ${this.maxLine} bytes`);
				break;
			}
			const piece = chunk.subarray(pos, nl);
			const line = this.parts.length === 0 ? piece : Buffer.concat([...this.parts, piece]);
			pos = nl + 1;
			this.parts = [];
			this.partsLen = 0;
			if (line.length === 0 || (line[0] <= 0x20 && line.toString("latin1").trim() === "")) continue;
			const msg = JSON.parse(line.toString("utf8")) as Message;
			if (msg === null || typeof msg !== "object") throw new Error("pi-session: a message that is not an object");
			const n = msg.bulk ?? 0;
			if (!Number.isSafeInteger(n) || n < 0) throw new Error(`pi-session: bad bulk count ${JSON.stringify(msg.bulk)}`);
			if (n === 0) {
				out.push({ msg });
				continue;
			}
			this.head = msg;
			this.need = n;
		}
		return out;
	}

	private reset() {
		this.parts = [];
		this.partsLen = 0;
		this.need = -1;
		this.head = undefined;
	}
}
