// The operators' REST API, with the login token kept in sessionStorage
// (never in a URL). Errors are RFC 9457 problem+json; `ApiError.detail` shows them.
const TOKEN_KEY = "remote-support.token";

export class ApiError extends Error {
  constructor(status, problem) {
    super(problem?.detail || problem?.title || `HTTP ${status}`);
    this.status = status;
    this.problem = problem;
  }
}

export const token = {
  get: () => sessionStorage.getItem(TOKEN_KEY),
  set: (value) => sessionStorage.setItem(TOKEN_KEY, value),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
};

async function request(method, path, body, bytes = false) {
  const headers = { Accept: "application/json, application/problem+json" };
  const bearer = token.get();
  if (bearer) headers.Authorization = `Bearer ${bearer}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status === 204) return { data: null, response };
  if (bytes && response.ok) return { data: new Uint8Array(await response.arrayBuffer()), response };
  const type = response.headers.get("Content-Type") || "";
  const data = type.includes("json") ? await response.json() : await response.text();
  if (!response.ok) {
    if (response.status === 401) token.clear();
    throw new ApiError(response.status, typeof data === "object" ? data : { detail: data });
  }
  return { data, response };
}

export async function api(method, path, body) {
  return (await request(method, path, body)).data;
}

/** A GET whose answer is bytes (a recording's segment), as a Uint8Array. */
export async function apiBytes(path) {
  return (await request("GET", path, undefined, true)).data;
}

// The next page of a list: `Link: <URL>; rel="next"` (RFC 8288), relative to the server.
function nextPage(response) {
  const link = response.headers.get("Link") || "";
  const found = link.split(",").map((part) => part.match(/<([^>]*)>\s*;\s*rel="?next"?/)).find(Boolean);
  return found ? found[1] : null;
}

// A whole list, page by page, up to `most` items (every list of the API is paged).
export async function apiAll(path, most = 10000) {
  const all = [];
  let next = path;
  while (next && all.length < most) {
    const { data, response } = await request("GET", next);
    all.push(...data);
    next = nextPage(response);
  }
  return all.slice(0, most);
}

/** The viewer socket for a viewer token's answer: in a cluster it names the node holding
 * the session, so a balancer that routes by it (deploy/haproxy) sends it straight there. */
export function viewerSocket(grant) {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const node = grant.node ? `?node=${encodeURIComponent(grant.node)}` : "";
  const ws = new WebSocket(`${scheme}://${location.host}/ws/viewer${node}`);
  ws.binaryType = "arraybuffer";
  return ws;
}

const pause = (ms) => new Promise((resolve) => { setTimeout(resolve, ms); });

/** A viewer token for a session's own channel (`channel`: "backstage", a terminal, or
 * "file_transfer"): the answer, {token, node, ...}. While the end user is being asked, it
 * asks again every 2 s and tells `waiting` so (`asking`: what the end user is asked to
 * allow). */
export async function channelToken(sessionId, channel, asking, waiting) {
  const path = `/api/sessions/${encodeURIComponent(sessionId)}/viewer-token?${channel}=true`;
  for (;;) {
    try {
      return await api("POST", path);
    } catch (error) {
      const isAsking = error instanceof ApiError && error.status === 409
        && !String(error.problem?.type || "").includes("session-not-live");
      if (!isAsking) throw error;
      waiting(error.problem?.consent === "asking"
        ? `Waiting for the end user to allow ${asking}…`
        : `Waiting: ${error.message}`);
      await pause(2000);
    }
  }
}
