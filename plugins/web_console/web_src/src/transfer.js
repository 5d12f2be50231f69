// One file moving between this page and the agent (a FILE_TRANSFER session), with no DOM:
// files.js owns the socket and the page. A transfer talks through a `link`, one per socket:
//   link.open(handler) -> a request id routed to handler.{reply, data, ack} on that socket
//   link.close(id)     -> its messages go nowhere any more
//   link.send(kind, payload), link.alive() (false once that socket is gone)
// A dropped socket suspends a running transfer; start(link) on the next socket resumes it.
//
// Flow control (protocol.files: CHUNK per FileData, WINDOW per transfer): an upload never has
// more than WINDOW bytes sent and not acknowledged by the agent's FileAck; a download
// acknowledges what it has stored every ACK_EVERY bytes and ACK_DELAY ms after a chunk.
// SHA-256 end to end, hashed as the bytes go (@noble/hashes: WebCrypto has no incremental
// digest): an upload's last chunk carries its hash, a download's last chunk is checked.
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex } from "@noble/hashes/utils.js";
import { FileOp, toNumber } from "./proto.js";

export const CHUNK = 256 * 1024;
export const WINDOW = 8 * 1024 * 1024;
export const ACK_EVERY = 1024 * 1024;
export const ACK_DELAY = 100;
const RATE_SPAN = 3000; // ms of progress the rate is measured over
const BUSY_TRIES = 10; // an upload the agent calls "busy" is asked again this often,
const BUSY_DELAY = 300; // this many ms apart

/** FileReply.error in plain words (the agent's own message follows them). */
export const PLAIN = {
  "not-found": "It is not there (any more).",
  "outside-root": "That is outside the folders this machine shares.",
  "invalid-name": "That name or path is not allowed.",
  exists: "Something of that name is already there (tick “Replace existing” to overwrite a file).",
  "not-a-directory": "That is a file, not a folder.",
  "is-a-directory": "That is a folder, not a file.",
  "no-space": "The machine's disk is full.",
  changed: "The file changed on the machine since the download began.",
  "too-large": "That is larger than the server allows.",
  checksum: "The file arrived damaged: its SHA-256 did not match.",
  cancelled: "Cancelled.",
  busy: "That file is busy with another transfer.",
  io: "The machine could not read or write it.",
};

/** An error reply as one sentence for a person (a code not the agent's, such as this
 * page's own "broken", "local" or "ended", is said by its message alone). */
export function describe(code, message = "") {
  const plain = PLAIN[code];
  if (!plain) return message || code || "Failed.";
  return message && message !== plain ? `${plain} (${message})` : plain;
}

export function hex(hasher) {
  return bytesToHex(hasher.digest());
}

/** SHA-256 of the first `length` bytes of a Blob, and the hasher left at that point. */
export async function hashPrefix(blob, length) {
  const hasher = sha256.create();
  for (let at = 0; at < length; at += 4 * CHUNK) {
    const end = Math.min(length, at + 4 * CHUNK);
    hasher.update(new Uint8Array(await blob.slice(at, end).arrayBuffer()));
  }
  return { hasher, hex: hex(hasher.clone()) };
}

let nextId = 1;

class Transfer {
  constructor(kind, name, path, size, onChange) {
    this.id = nextId++;
    this.kind = kind; // "download" | "upload"
    this.name = name;
    this.path = path; // the virtual path on the agent
    this.size = size; // null: unknown yet (a folder's zip)
    this.done = 0; // bytes stored by the receiver
    this.state = "queued"; // queued, running, verifying, done, failed, cancelled
    this.error = ""; // the failure's code, and its words
    this.message = "";
    this.note = ""; // "reconnecting…", "resumed at …"
    this.resumes = []; // the offsets each resume continued from (tests read them)
    this.restarts = 0; // resumes refused because the agent's partial was not this file's
    this.link = null;
    this.requestId = 0;
    this.samples = [];
    this.onChange = onChange;
  }

  get active() {
    return this.state === "running" || this.state === "verifying";
  }

  get finished() {
    return this.state === "done" || this.state === "failed" || this.state === "cancelled";
  }

  /** Bytes per second over the last few seconds, or 0. */
  rate() {
    if (this.samples.length < 2) return 0;
    const first = this.samples[0];
    const last = this.samples[this.samples.length - 1];
    const ms = last[0] - first[0];
    return ms > 0 ? ((last[1] - first[1]) * 1000) / ms : 0;
  }

  /** Seconds left at the current rate, or null. */
  left() {
    const rate = this.rate();
    if (this.size == null || !rate || this.state !== "running") return null;
    return Math.max(0, this.size - this.done) / rate;
  }

  progressed() {
    const now = performance.now();
    this.samples.push([now, this.done]);
    while (this.samples.length > 2 && now - this.samples[0][0] > RATE_SPAN) this.samples.shift();
    this.onChange(this);
  }

  changed() {
    this.onChange(this);
  }

  /** Open a request on `link` for this transfer; the previous request (if any) is forgotten. */
  openRequest(link) {
    this.forget();
    this.link = link;
    this.requestId = link.open({
      reply: (message) => this.onReply(message),
      data: (message) => this.onData(message),
      ack: (message) => this.onAck(message),
    });
    return this.requestId;
  }

  forget() {
    if (this.link && this.requestId) this.link.close(this.requestId);
    this.requestId = 0;
  }

  /** The socket is gone: wait for the next one (start() again). */
  suspend() {
    this.requestId = 0;
    this.link = null;
    this.samples = [];
    if (this.active) {
      this.note = "reconnecting…";
      this.changed();
    }
  }

  current(link) {
    return this.link === link && this.requestId !== 0 && link.alive();
  }

  fail(code, message) {
    if (this.finished) return;
    this.stopTimers();
    this.forget();
    this.state = code === "cancelled" ? "cancelled" : "failed";
    this.error = code;
    this.message = describe(code, message);
    this.note = "";
    this.release();
    this.changed();
  }

  /** Stop it: the agent is told (an upload's partial file goes), the row says so. */
  cancel() {
    if (this.finished) return;
    if (this.link?.alive() && this.requestId) {
      this.link.send("fileRequest", { requestId: this.requestId, op: FileOp.CANCEL, path: this.path });
    }
    this.fail("cancelled", "");
  }

  finish() {
    this.stopTimers();
    this.forget();
    this.state = "done";
    this.note = "";
    this.changed();
  }

  stopTimers() {}

  release() {}
}

/** A file (or a folder, as a zip) from the agent: kept in memory and saved as a Blob, or,
 * given a `sink` (a FileSystemWritableFileStream the technician chose), written to disk as
 * it arrives. The browser keeps such a file under a temporary name until close(), and
 * abort() drops it: a download that fails its SHA-256 never appears under its name. */
export class Download extends Transfer {
  constructor({ name, path, size, isDir, sink = null }, onChange, onSaved) {
    super("download", isDir ? `${name}.zip` : name, path, isDir ? null : size, onChange);
    this.isDir = isDir;
    this.sink = sink;
    this.writing = Promise.resolve(); // the sink's writes, in order
    this.chunks = [];
    this.hasher = sha256.create();
    this.version = "";
    this.unacked = 0; // bytes stored and not yet acknowledged
    this.ackTimer = 0;
    this.maxUnacked = 0; // the most that waited to be acknowledged (tests read it)
    this.onSaved = onSaved;
  }

  start(link) {
    if (this.finished) return;
    this.state = "running";
    const id = this.openRequest(link);
    this.unacked = 0; // the agent's window counts this request's bytes afresh
    if (this.done > 0) {
      this.resumes.push(this.done);
      this.note = `resumed at ${this.done} bytes`;
    } else {
      this.note = "";
    }
    link.send("fileRequest", {
      requestId: id, op: FileOp.DOWNLOAD, path: this.path, offset: BigInt(this.done),
      version: this.done > 0 ? this.version : "",
    });
    this.changed();
  }

  suspend() {
    this.stopTimers();
    this.unacked = 0; // the agent counts afresh on the resumed request
    super.suspend();
  }

  onReply(reply) {
    if (reply.error) {
      this.fail(reply.error, reply.message);
      return;
    }
    if (!this.version) this.version = reply.version;
    if (reply.archive) this.size = null;
    else if (this.size == null || this.done === 0) this.size = toNumber(reply.size);
    this.changed();
  }

  onData(chunk) {
    if (this.state !== "running") return;
    const offset = toNumber(chunk.offset);
    if (offset !== this.done) {
      this.fail("broken", `The data went astray: byte ${offset} came where ${this.done} was due.`);
      return;
    }
    const { data } = chunk;
    if (data.length) {
      if (this.sink) {
        const { sink } = this;
        this.writing = this.writing.then(() => sink.write(data));
        this.writing.catch((error) => this.fail("local", `This computer could not write the file: ${error.message}`));
      } else {
        this.chunks.push(data);
      }
      this.hasher.update(data);
      this.done += data.length;
      this.unacked += data.length;
      this.maxUnacked = Math.max(this.maxUnacked, this.unacked);
    }
    if (chunk.last) {
      this.stopTimers(); // the last chunk ends the transfer: nothing more is acknowledged
      this.verify(chunk.sha256);
      return;
    }
    if (this.unacked >= ACK_EVERY) this.flushAck();
    else if (!this.ackTimer) this.ackTimer = setTimeout(() => this.flushAck(), ACK_DELAY);
    this.progressed();
  }

  onAck() {}

  /** Every byte is in and checked, and the file is being saved: too late to cancel (a
   * cancel now would leave the saved file, the row saying "cancelled"). */
  cancel() {
    if (this.state === "verifying") return;
    super.cancel();
  }

  /** Acknowledge what arrived since the last acknowledgement. */
  flushAck() {
    clearTimeout(this.ackTimer);
    this.ackTimer = 0;
    if (this.unacked > 0 && this.link?.alive() && this.requestId) {
      this.link.send("fileAck", { requestId: this.requestId, bytes: BigInt(this.unacked) });
    }
    this.unacked = 0;
  }

  stopTimers() {
    clearTimeout(this.ackTimer);
    this.ackTimer = 0;
  }

  verify(expected) {
    this.state = "verifying";
    this.changed();
    const got = hex(this.hasher);
    if (this.size != null && this.size !== this.done) {
      this.fail("broken", `Only ${this.done} bytes of ${this.size} arrived.`);
    } else if (!expected || got !== expected.toLowerCase()) {
      this.fail("checksum", `the agent's SHA-256 is ${expected || "missing"}, these bytes' ${got}`);
    } else if (this.sink) {
      const { sink } = this;
      this.sink = null; // closed once, here; release() no longer aborts it
      this.writing.then(() => sink.close()).then(() => {
        this.sha256 = got;
        this.size = this.done;
        this.finish();
      }, (error) => {
        this.fail("local", `This computer could not write the file: ${error.message}`);
      });
    } else {
      this.sha256 = got;
      this.size = this.done;
      const blob = new Blob(this.chunks, { type: "application/octet-stream" });
      this.chunks = [];
      this.finish();
      this.onSaved(this, blob);
    }
  }

  release() {
    this.chunks = [];
    if (this.sink) {
      const { sink } = this;
      this.sink = null;
      this.writing.finally(() => sink.abort()).catch(() => {});
    }
  }
}

/** A local File to the agent, at `path` (overwrite: replace what is there). */
export class Upload extends Transfer {
  constructor({ file, path, overwrite }, onChange) {
    super("upload", file.name, path, file.size, onChange);
    this.file = file;
    this.overwrite = Boolean(overwrite);
    this.tried = false; // a request went out before: the next one resumes
    this.sent = 0; // bytes sent on this request (from its offset)
    this.hasher = null;
    this.lastSent = false;
    this.pumping = false;
    this.ready = false; // the agent answered where the data starts
    this.restarting = false; // a CANCEL of a partial file not this file's prefix is out
    this.busyTries = 0;
    this.maxOutstanding = 0;
  }

  start(link, { resume = this.tried } = {}) {
    if (this.finished) return;
    this.state = "running";
    this.ready = false;
    this.lastSent = false;
    this.restarting = false;
    const id = this.openRequest(link);
    this.tried = true;
    this.resuming = resume;
    link.send("fileRequest", {
      requestId: id, op: FileOp.UPLOAD, path: this.path, size: BigInt(this.size), resume,
      overwrite: this.overwrite,
    });
    this.changed();
  }

  onReply(reply) {
    if (this.restarting) {
      // The CANCEL of the partial that was not ours is over: now afresh.
      if (reply.error || reply.done) this.start(this.link, { resume: false });
    } else if (reply.error === "busy" && !this.ready && this.busyTries < BUSY_TRIES) {
      // The agent still holds the partial file for a request that is ending (the one this
      // page cancelled, or the one of the socket that dropped): ask again shortly.
      this.busyTries += 1;
      const { link, requestId } = this;
      setTimeout(() => {
        if (this.current(link) && this.requestId === requestId && this.state === "running") {
          this.start(link, { resume: this.resuming });
        }
      }, BUSY_DELAY);
    } else if (reply.error) {
      this.fail(reply.error, reply.message);
    } else if (reply.done) {
      if (this.lastSent) {
        this.done = this.size;
        this.finish();
      } else {
        this.fail("broken", "The machine ended the upload before its last chunk.");
      }
    } else if (!this.ready) {
      this.begin(toNumber(reply.offset), reply.sha256);
    }
  }

  /** The agent's data starts at `offset`: continue there if its prefix is ours, else afresh. */
  async begin(offset, theirs) {
    const { link, requestId } = this;
    let hasher = sha256.create();
    if (offset > 0) {
      let ours = "";
      if (offset <= this.size) ({ hasher, hex: ours } = await hashPrefix(this.file, offset));
      if (!this.current(link) || this.requestId !== requestId || this.state !== "running") return;
      if (ours !== String(theirs).toLowerCase()) {
        // Not the prefix of this file (another file's partial, or damaged): start afresh.
        // The CANCEL removes it; once the agent says so, the upload starts again from 0.
        this.note = "the partial file on the machine differs: starting again";
        this.restarting = true;
        this.restarts += 1;
        this.done = 0;
        this.samples = [];
        link.send("fileRequest", { requestId, op: FileOp.CANCEL, path: this.path });
        this.changed();
        return;
      }
      this.resumes.push(offset);
      this.note = `resumed at ${offset} bytes`;
    } else if (this.resuming) {
      this.note = "";
    }
    this.hasher = hasher;
    this.busyTries = 0;
    this.sent = offset;
    this.done = offset;
    this.ready = true;
    this.progressed();
    this.pump();
  }

  onAck(ack) {
    if (!this.ready) return;
    this.done = Math.min(this.sent, this.done + toNumber(ack.bytes));
    this.progressed();
    this.pump();
  }

  onData() {}

  /** Send chunks while the window has room: never more than WINDOW unacknowledged. */
  async pump() {
    if (this.pumping) return;
    this.pumping = true;
    try {
      const { link, requestId } = this;
      while (this.ready && !this.lastSent && this.state === "running" && this.current(link)
             && this.requestId === requestId && this.sent - this.done < WINDOW) {
        const end = Math.min(this.size, this.sent + CHUNK, this.done + WINDOW);
        const data = new Uint8Array(await this.file.slice(this.sent, end).arrayBuffer());
        if (!this.current(link) || this.requestId !== requestId || this.state !== "running") break;
        this.hasher.update(data);
        const last = end === this.size;
        link.send("fileData", {
          requestId, offset: BigInt(this.sent), data, last, sha256: last ? hex(this.hasher) : "",
        });
        this.sent = end;
        this.maxOutstanding = Math.max(this.maxOutstanding, this.sent - this.done);
        if (last) {
          this.lastSent = true;
          this.state = "verifying";
          this.changed();
        }
      }
    } catch (error) {
      this.fail("local", `This computer could not read the file: ${error.message}`);
    } finally {
      this.pumping = false;
    }
  }

  suspend() {
    this.ready = false;
    if (this.state === "verifying") this.state = "running"; // the last chunk goes again
    super.suspend();
  }

  release() {
    this.hasher = null;
  }
}
