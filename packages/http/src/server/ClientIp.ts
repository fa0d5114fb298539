/**
 * The client's IP address (CONTRACT §2, §14): the socket's address, with `X-Forwarded-For` consulted only when
 * the server sits behind a trusted proxy. IPv4-mapped IPv6 addresses are written as plain IPv4.
 */
import { BlockList, isIP } from "node:net"
import type { TLSSocket } from "node:tls"
import type { HttpServerRequest } from "effect/http/HttpServerRequest"

const mappedPrefix = "::ffff:"

/** An address as the contract writes it: `::ffff:10.0.0.1` becomes `10.0.0.1`; anything not an IP is dropped. */
export const normalizeIp = (address: string): string | undefined => {
  let ip = address.trim()
  // `[::1]` as some proxies write it
  if (ip.startsWith("[") && ip.endsWith("]")) ip = ip.slice(1, -1)
  if (ip.toLowerCase().startsWith(mappedPrefix) && isIP(ip.slice(mappedPrefix.length)) === 4) {
    ip = ip.slice(mappedPrefix.length)
  }
  return isIP(ip) === 0 ? undefined : ip
}

/**
 * The client IP of a request. `trustProxyHops` is how many proxies in front of the server append to
 * `X-Forwarded-For` (0: ignore the header); the client is the entry that many places from its right end,
 * so addresses a client writes into the header itself are never taken.
 */
export const clientIp = (request: HttpServerRequest, trustProxyHops: number): string | undefined => {
  const socket = request.remoteAddress
  return clientIpFrom(socket._tag === "Some" ? socket.value : undefined, request.headers["x-forwarded-for"], trustProxyHops)
}

/** {@link clientIp} from the socket's address and the `X-Forwarded-For` header as received. */
export const clientIpFrom = (
  socketAddress: string | undefined,
  forwardedFor: string | undefined,
  trustProxyHops: number
): string | undefined => {
  const socketIp = socketAddress === undefined ? undefined : normalizeIp(socketAddress)
  if (trustProxyHops <= 0) return socketIp
  if (forwardedFor === undefined || forwardedFor === "") return socketIp
  const hops = forwardedFor.split(",")
  const entry = hops[Math.max(0, hops.length - trustProxyHops)]
  return (entry === undefined ? undefined : normalizeIp(entry)) ?? socketIp
}

/** A set of address ranges (CIDRs or single addresses, IPv4 and IPv6). */
export interface IpAllowList {
  /** The ranges as configured. */
  readonly ranges: ReadonlyArray<string>
  /** Whether an address lies in one of the ranges. */
  readonly allows: (ip: string) => boolean
}

/** A range the allow-list could not read. */
export class InvalidIpRange extends Error {
  readonly range: string
  constructor(range: string) {
    super(`Not an IP address or CIDR range: ${JSON.stringify(range)}`)
    this.range = range
  }
}

/**
 * Reads an allow-list from ranges such as `10.0.0.0/8`, `192.168.1.7`, `2001:db8::/32`, `::1`. An IPv4-mapped
 * IPv6 range (`::ffff:10.0.0.0/104`) is read as its IPv4 range. Throws {@link InvalidIpRange} on a bad entry.
 */
export const makeIpAllowList = (ranges: ReadonlyArray<string>): IpAllowList => {
  const list = new BlockList()
  for (const raw of ranges) {
    const range = raw.trim()
    const slash = range.indexOf("/")
    const address = slash === -1 ? range : range.slice(0, slash)
    const prefixText = slash === -1 ? undefined : range.slice(slash + 1)
    const prefix = prefixText === undefined ? undefined : Number(prefixText)
    const ip = normalizeIp(address)
    if (ip === undefined || (prefixText !== undefined && !/^\d{1,3}$/.test(prefixText))) {
      throw new InvalidIpRange(raw)
    }
    let bits = prefix
    const mapped = ip !== address.trim() && isIP(ip) === 4 && address.includes(":")
    if (mapped && bits !== undefined) {
      if (bits < 96) throw new InvalidIpRange(raw)
      bits -= 96
    }
    const family = isIP(ip) === 4 ? "ipv4" : "ipv6"
    if (bits === undefined) {
      list.addAddress(ip, family)
    } else {
      if (bits > (family === "ipv4" ? 32 : 128)) throw new InvalidIpRange(raw)
      list.addSubnet(ip, bits, family)
    }
  }
  return {
    ranges: ranges.map((range) => range.trim()),
    allows: (address) => {
      const ip = normalizeIp(address)
      if (ip === undefined) return false
      return list.check(ip, isIP(ip) === 4 ? "ipv4" : "ipv6")
    }
  }
}

/** Reads a comma-separated list of ranges (the form of `LM_ADMIN_ALLOWED_IPS`); empty entries are skipped. */
export const parseIpAllowList = (text: string): IpAllowList =>
  makeIpAllowList(text.split(",").map((range) => range.trim()).filter((range) => range !== ""))

/**
 * Whether a proxy said the request came over HTTPS: `X-Forwarded-Proto` read like `X-Forwarded-For`, the entry
 * `trustProxyHops` places from its right end (0 hops: the header is ignored).
 */
export const forwardedHttps = (forwardedProto: string | undefined, trustProxyHops: number): boolean => {
  if (trustProxyHops <= 0 || forwardedProto === undefined) return false
  const hops = forwardedProto.split(",")
  return hops[Math.max(0, hops.length - trustProxyHops)]?.trim().toLowerCase() === "https"
}

/**
 * The host a trusted proxy was asked for (`X-Forwarded-Host`, the entry `trustProxyHops` from its right end, as
 * `X-Forwarded-Proto` is read); undefined without `LM_TRUST_PROXY` or without the header.
 */
export const forwardedHost = (forwardedHostHeader: string | undefined, trustProxyHops: number): string | undefined => {
  if (trustProxyHops <= 0 || forwardedHostHeader === undefined) return undefined
  const hops = forwardedHostHeader.split(",")
  const entry = hops[Math.max(0, hops.length - trustProxyHops)]?.trim()
  return entry === "" ? undefined : entry
}

/** A `Host` value: a DNS name, an IPv4 address or a bracketed IPv6 address, with an optional port. */
const hostPattern = /^(?:[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*\.?|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/

/** The host of an address the server listens on, as a URL writes it (IPv6 in brackets). */
const urlHost = (address: string, port: number | undefined): string =>
  `${address.includes(":") ? `[${address}]` : address}${port === undefined ? "" : `:${port}`}`

/**
 * The origin the client reached: `https` over TLS (or per `X-Forwarded-Proto` behind a trusted proxy), else
 * `http`; the host of `X-Forwarded-Host` behind a trusted proxy, else `Host`, else (an HTTP/1.0 request without
 * one) the address and port the connection reached. Undefined when the host given is no host (the caller answers
 * 400): it would make a broken URL.
 */
export const requestOrigin = (request: HttpServerRequest, trustProxyHops: number): string | undefined => {
  const socket = (request.source as { readonly socket?: Partial<TLSSocket> }).socket
  const https = socket?.encrypted === true || forwardedHttps(request.headers["x-forwarded-proto"], trustProxyHops)
  const given = forwardedHost(request.headers["x-forwarded-host"], trustProxyHops) ?? request.headers.host
  const host = given ?? (socket?.localAddress === undefined ? undefined : urlHost(socket.localAddress, socket.localPort))
  if (host === undefined || host.length > 261 || !hostPattern.test(host)) return undefined
  return `${https ? "https" : "http"}://${host}`
}
