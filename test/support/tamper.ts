/**
 * The text with the first character of its last dot-separated part changed: a signature or MAC
 * that differs in its first six bits, whatever it was. (Changing the last character is no
 * tampering when it already was the replacement, and the last base64url character of a MAC also
 * carries padding bits a decoder may ignore.)
 */
export function tampered(text: string): string {
  const at = text.lastIndexOf('.') + 1;
  return `${text.slice(0, at)}${text[at] === 'A' ? 'B' : 'A'}${text.slice(at + 1)}`;
}
