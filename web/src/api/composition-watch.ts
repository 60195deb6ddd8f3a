// One Composition followed live: `GET /api/v1/namespaces/{ns}/compositions/{name}` with
// `Accept: text/event-stream` (docs/sidecar-api.md "Compositions"), the apiserver's watch made
// with the caller's token (their Role needs `compositions watch`). On the wire:
//
//   event: ADDED | MODIFIED | DELETED     id: the object's resourceVersion
//   data: {"object": {…}, "managers": [{"manager", "operation", "time"}]}
//   event: RESET                          id: the list's resourceVersion
//   data: {"items": [{"object", "managers"}], "resourceVersion"}   (the watch was too old)
//
// Without `Last-Event-ID` the stream starts with an ADDED frame of the object as it is; with it,
// only later changes come. The frames are read here, leniently (anything the server sends is
// untrusted: an odd frame is skipped, never thrown on), into what changed about the one name
// followed; the connection, its resumption after the last frame read and its backoff are
// sse.ts's. A RESET is searched for the name: there, it is the object as it is now; missing,
// the Composition is gone.

import type { EventSourceMessage } from 'eventsource-parser';
import { parseStored, type StoredComposition } from './compositions.ts';
import { apiPath, isRecord, type Fetch } from './http.ts';
import { followSse, type SseEnd, type SseStatus } from './sse.ts';

/** One of the object's field managers, once each (`managedFields` without the field sets). */
export interface FieldManager {
  readonly manager: string;
  /** `Apply` or `Update`, as the apiserver says. */
  readonly operation: string;
  /** When it last changed its fields (RFC 3339), when the apiserver says. */
  readonly time: string | null;
}

/** What a frame says about the Composition followed. */
export type CompositionChange =
  /** It is now `composition` (ADDED, MODIFIED, or found in a RESET). */
  | {
      readonly kind: 'changed';
      readonly via: 'ADDED' | 'MODIFIED' | 'RESET';
      readonly resourceVersion: string | null;
      readonly composition: StoredComposition;
      readonly managers: readonly FieldManager[];
    }
  /** It is gone (DELETED, or missing from a RESET). */
  | {
      readonly kind: 'deleted';
      readonly via: 'DELETED' | 'RESET';
      readonly resourceVersion: string | null;
      /** Who managed its fields last (not who deleted it: the apiserver does not record that); empty from a RESET. */
      readonly managers: readonly FieldManager[];
      /** `metadata.deletionTimestamp`, when the object had one. */
      readonly deletedAt: string | null;
    };

/** A frame read: a change, or why it was skipped (the stream goes on). */
export type WatchFrame = { readonly change: CompositionChange } | { readonly skip: string };

/** What may be sent back as `Last-Event-ID` (the sidecar's rule: 1–64 letters and digits). */
export function isResumeId(id: string | undefined): id is string {
  return id !== undefined && /^[A-Za-z0-9]{1,64}$/.test(id);
}

export function parseManagers(value: unknown): FieldManager[] {
  if (!Array.isArray(value)) return [];
  return value.filter(isRecord).flatMap((m) => {
    const manager = m['manager'];
    if (typeof manager !== 'string' || manager === '') return [];
    const operation = m['operation'];
    const time = m['time'];
    return [{ manager, operation: typeof operation === 'string' ? operation : '', time: typeof time === 'string' && time !== '' ? time : null }];
  });
}

function nameOf(object: unknown): string | null {
  if (!isRecord(object) || !isRecord(object['metadata'])) return null;
  const name = object['metadata']['name'];
  return typeof name === 'string' ? name : null;
}

function versionOf(object: unknown, id: string | undefined): string | null {
  if (isRecord(object) && isRecord(object['metadata'])) {
    const version = object['metadata']['resourceVersion'];
    if (typeof version === 'string' && version !== '') return version;
  }
  return isResumeId(id) ? id : null;
}

function json(data: string): unknown {
  try {
    return JSON.parse(data) as unknown;
  } catch {
    return undefined;
  }
}

/** One frame of the watch of Composition `name`, read. */
export function parseWatchFrame(frame: Pick<EventSourceMessage, 'event' | 'id' | 'data'>, name: string): WatchFrame {
  const event = frame.event ?? 'message';
  if (event !== 'ADDED' && event !== 'MODIFIED' && event !== 'DELETED' && event !== 'RESET') return { skip: `an unknown event "${event}"` };
  const data = json(frame.data);
  if (!isRecord(data)) return { skip: 'not a JSON object' };

  if (event === 'RESET') {
    if (!Array.isArray(data['items'])) return { skip: 'a RESET without items' };
    const listVersion = typeof data['resourceVersion'] === 'string' && data['resourceVersion'] !== '' ? data['resourceVersion'] : isResumeId(frame.id) ? frame.id : null;
    const item = data['items'].filter(isRecord).find((i) => nameOf(i['object']) === name);
    if (item === undefined) return { change: { kind: 'deleted', via: 'RESET', resourceVersion: listVersion, managers: [], deletedAt: null } };
    const composition = parseStored(item['object']);
    if (composition === null) return { skip: `a RESET whose ${name} is not a Composition` };
    return { change: { kind: 'changed', via: 'RESET', resourceVersion: versionOf(item['object'], undefined) ?? listVersion, composition, managers: parseManagers(item['managers']) } };
  }

  const object = data['object'];
  const named = nameOf(object);
  if (named === null) return { skip: 'an object without a name' };
  if (named !== name) return { skip: `about ${named}, not ${name}` };
  const managers = parseManagers(data['managers']);
  const resourceVersion = versionOf(object, frame.id);
  if (event === 'DELETED') {
    const meta = isRecord(object) && isRecord(object['metadata']) ? object['metadata'] : {};
    const deletedAt = typeof meta['deletionTimestamp'] === 'string' && meta['deletionTimestamp'] !== '' ? meta['deletionTimestamp'] : null;
    return { change: { kind: 'deleted', via: 'DELETED', resourceVersion, managers, deletedAt } };
  }
  const composition = parseStored(object);
  if (composition === null) return { skip: 'an object that is not a Composition' };
  return { change: { kind: 'changed', via: event, resourceVersion, composition, managers } };
}

export interface CompositionWatchOptions {
  readonly namespace: string;
  readonly name: string;
  /** The bearer token, or a function giving the current one (read at every connection). */
  readonly token: string | (() => string);
  readonly onChange: (change: CompositionChange) => void;
  readonly onStatus?: (status: SseStatus) => void;
  /** A frame that was skipped, and why. */
  readonly onSkipped?: (why: string) => void;
  /** The sidecar's origin, empty for the page's own. */
  readonly base?: string;
  readonly fetch?: Fetch;
}

export interface CompositionWatch {
  /** Ends the watch (aborting the connection); `done` then resolves with `closed`. */
  close(): void;
  /** Resolves once, when the watch stops for good (it never ends by itself: closed, refused or given up). */
  readonly done: Promise<SseEnd>;
}

/** Follows Composition `name`: each frame about it read and handed over, resumed after the last one read. */
export function watchComposition(options: CompositionWatchOptions): CompositionWatch {
  let resumeId: string | null = null;
  const stream = followSse({
    url: `${options.base ?? ''}${apiPath('namespaces', options.namespace, 'compositions', options.name)}`,
    token: options.token,
    resumeId: () => resumeId,
    // A quiet Composition's stream brings nothing but keep-alives for hours: a connection that
    // carried them was a working one, and does not count toward giving up.
    commentsAreNews: true,
    endedEarly: 'the sidecar ended the watch (it resumes from the last change read)',
    onFrame: (frame) => {
      const read = parseWatchFrame(frame, options.name);
      if ('skip' in read) {
        options.onSkipped?.(read.skip);
        return 'old';
      }
      // Resumed after the last frame read, never after one skipped (it would be lost).
      if (isResumeId(frame.id)) resumeId = frame.id;
      try {
        options.onChange(read.change);
      } catch (error) {
        // The owner's failure is the owner's, never taken for a dropped connection.
        queueMicrotask(() => {
          throw error;
        });
      }
      return 'new';
    },
    ...(options.onStatus === undefined ? {} : { onStatus: options.onStatus }),
    ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
  });
  return stream;
}
