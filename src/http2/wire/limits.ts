// The settings and limits every HTTP/2 client connection gets (RFC 9113; CVE-2023-44487
// rapid reset, CVE-2024-27316 CONTINUATION flood, CVE-2019-9518 empty frames): what a
// client may cost before its stream or its connection is refused; and what a pod may
// cost portico's own HTTP/2 client.

/** Settings and limits every HTTP/2 client connection gets. */
export const http2Limits = Object.freeze({
  /** Advertised; a stream beyond it is refused (RST_STREAM REFUSED_STREAM). */
  maxConcurrentStreams: 128,
  /** Advertised SETTINGS_MAX_HEADER_LIST_SIZE; a larger head is a stream error (ENHANCE_YOUR_CALM). */
  maxHeaderListSize: 32 * 1024,
  /** Compressed bytes of one header block (HEADERS + CONTINUATION) before the connection is ended. */
  maxHeaderBlockBytes: 256 * 1024,
  /** CONTINUATION frames of one header block before the connection is ended (CVE-2024-27316). */
  maxContinuations: 64,
  /** RST_STREAM frames a client may send in a burst, and per second after it: beyond, GOAWAY (CVE-2023-44487). */
  streamResetBurst: 200,
  streamResetRate: 50,
  /** Malformed frames or heads (empty DATA frames too), and streams refused for the limits above, before the connection is ended. */
  maxSessionInvalidFrames: 100,
  maxSessionRejectedStreams: 100,
  /** SETTINGS and PING acknowledgements queued while the client does not read: beyond, GOAWAY. */
  maxQueuedAcks: 1000,
  /** ms a client has to acknowledge our SETTINGS: beyond, GOAWAY SETTINGS_TIMEOUT (RFC 9113 section 6.5.3). */
  settingsAckTimeout: 10_000,
  /** Bytes queued toward the client (socket included) above which DATA waits. */
  maxQueuedBytes: 256 * 1024,
});

/** What a pod may cost portico's HTTP/2 client on one connection (client-connection.ts). */
export const http2ClientLimits = Object.freeze({
  /** Advertised SETTINGS_MAX_HEADER_LIST_SIZE; a larger response head or trailers fail the stream. */
  maxHeaderListSize: 64 * 1024,
  /** Compressed bytes of one header block (HEADERS + CONTINUATION) before the connection is ended. */
  maxHeaderBlockBytes: 256 * 1024,
  /** CONTINUATION frames of one header block before the connection is ended (CVE-2024-27316). */
  maxContinuations: 64,
  /** SETTINGS and PING acknowledgements queued while the pod does not read: beyond, GOAWAY. */
  maxQueuedAcks: 1000,
  /** Bytes queued toward the pod (socket included) above which DATA waits. */
  maxQueuedBytes: 256 * 1024,
});
