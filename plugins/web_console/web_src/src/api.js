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

export async function api(method, path, body) {
  const headers = { Accept: "application/json, application/problem+json" };
  const bearer = token.get();
  if (bearer) headers.Authorization = `Bearer ${bearer}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status === 204) return null;
  const type = response.headers.get("Content-Type") || "";
  const data = type.includes("json") ? await response.json() : await response.text();
  if (!response.ok) {
    if (response.status === 401) token.clear();
    throw new ApiError(response.status, typeof data === "object" ? data : { detail: data });
  }
  return data;
}
