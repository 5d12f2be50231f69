// <xterm-style>: what xterm.js's <style> elements become (build.mjs rewrites them).
// The console's CSP refuses inline <style> text; a constructed stylesheet adopted by
// the document is no inline style, so the same rules apply without 'unsafe-inline'.
// The element is inert (display: none in console.css); its text is the sheet's rules.

class XtermStyle extends HTMLElement {
  constructor() {
    super();
    this.cssSheet = new CSSStyleSheet();
    this.cssText = "";
  }

  get textContent() {
    return this.cssText;
  }

  set textContent(text) {
    this.cssText = String(text ?? "");
    this.cssSheet.replaceSync(this.cssText);
  }

  /** The rules, as a <style> element's `sheet` (insertRule and the like work on it). */
  get sheet() {
    return this.cssSheet;
  }

  connectedCallback() {
    const adopted = this.ownerDocument.adoptedStyleSheets;
    if (!adopted.includes(this.cssSheet)) {
      this.ownerDocument.adoptedStyleSheets = [...adopted, this.cssSheet];
    }
  }

  disconnectedCallback() {
    const doc = this.ownerDocument;
    doc.adoptedStyleSheets = doc.adoptedStyleSheets.filter((sheet) => sheet !== this.cssSheet);
  }
}

if (!customElements.get("xterm-style")) customElements.define("xterm-style", XtermStyle);
