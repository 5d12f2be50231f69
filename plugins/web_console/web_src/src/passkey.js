// Passkeys (WebAuthn) in the browser: the server's options (their JSON form) become the
// arguments of navigator.credentials.create/get, and the browser's answer becomes JSON
// again (the PublicKeyCredential.toJSON() form) for the server to verify.

function toBytes(b64url) {
  const b64 = b64url.replace(/-/g, "+").replace(/_/g, "/");
  const raw = atob(b64 + "=".repeat((4 - (b64.length % 4)) % 4));
  return Uint8Array.from(raw, (c) => c.charCodeAt(0));
}

function toB64url(buffer) {
  const bytes = new Uint8Array(buffer);
  let raw = "";
  for (const byte of bytes) raw += String.fromCharCode(byte);
  return btoa(raw).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

const descriptors = (list) => (list || []).map((c) => ({ ...c, id: toBytes(c.id) }));

/** Whether this page may use passkeys at all (a secure context with WebAuthn). */
export function passkeysAvailable() {
  return window.isSecureContext && typeof window.PublicKeyCredential === "function";
}

function attachment(credential) {
  return credential.authenticatorAttachment || undefined;
}

/** Register a passkey: `options` are the server's PublicKeyCredentialCreationOptions. */
export async function createPasskey(options) {
  const publicKey = { ...options, challenge: toBytes(options.challenge),
    user: { ...options.user, id: toBytes(options.user.id) },
    excludeCredentials: descriptors(options.excludeCredentials) };
  const credential = await navigator.credentials.create({ publicKey });
  const response = credential.response;
  return {
    id: credential.id, rawId: toB64url(credential.rawId), type: credential.type,
    authenticatorAttachment: attachment(credential),
    clientExtensionResults: credential.getClientExtensionResults(),
    response: {
      clientDataJSON: toB64url(response.clientDataJSON),
      attestationObject: toB64url(response.attestationObject),
      transports: typeof response.getTransports === "function" ? response.getTransports() : [],
    },
  };
}

/** Prove a passkey at login: `options` are the server's PublicKeyCredentialRequestOptions. */
export async function getPasskey(options) {
  const publicKey = { ...options, challenge: toBytes(options.challenge),
    allowCredentials: descriptors(options.allowCredentials) };
  const credential = await navigator.credentials.get({ publicKey });
  const response = credential.response;
  const answer = {
    id: credential.id, rawId: toB64url(credential.rawId), type: credential.type,
    authenticatorAttachment: attachment(credential),
    clientExtensionResults: credential.getClientExtensionResults(),
    response: {
      clientDataJSON: toB64url(response.clientDataJSON),
      authenticatorData: toB64url(response.authenticatorData),
      signature: toB64url(response.signature),
    },
  };
  if (response.userHandle && response.userHandle.byteLength) {
    answer.response.userHandle = toB64url(response.userHandle);
  }
  return answer;
}
