/**
 * Parsing of BigQuery's canonical civil-time and timestamp strings into the numbers the Storage
 * Write API takes: days since the epoch (DATE), seconds and microseconds since the epoch
 * (TIMESTAMP), and validated canonical strings (DATETIME, TIME). Pure arithmetic on the proleptic
 * Gregorian calendar; no `Date` objects.
 *
 * @internal
 */

/** 0001-01-01 as days since 1970-01-01. @internal */
export const minDays = -719_162
/** 9999-12-31 as days since 1970-01-01. @internal */
export const maxDays = 2_932_896
/** 0001-01-01T00:00:00Z in seconds since the epoch. @internal */
export const minSeconds = -62_135_596_800
/** 9999-12-31T23:59:59Z in seconds since the epoch. @internal */
export const maxSeconds = 253_402_300_799

/** Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`). @internal */
export const daysFromCivil = (year: number, month: number, day: number): number => {
  const y = month <= 2 ? year - 1 : year
  const era = Math.floor(y / 400)
  const yoe = y - era * 400
  const mp = (month + 9) % 12
  const doy = Math.floor((153 * mp + 2) / 5) + day - 1
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy
  return era * 146_097 + doe - 719_468
}

/** The date of a day number, as `[year, month, day]` (inverse of {@link daysFromCivil}). @internal */
export const civilFromDays = (days: number): readonly [number, number, number] => {
  const z = days + 719_468
  const era = Math.floor(z / 146_097)
  const doe = z - era * 146_097
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365)
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100))
  const mp = Math.floor((5 * doy + 2) / 153)
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1
  const month = mp < 10 ? mp + 3 : mp - 9
  return [yoe + era * 400 + (month <= 2 ? 1 : 0), month, day]
}

const daysInMonth = (year: number, month: number): number => {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31
}

/** Digits `s[from..from+count)` as a number, or -1 when one is not an ASCII digit. */
const digits = (s: string, from: number, count: number): number => {
  let value = 0
  for (let i = from; i < from + count; i++) {
    const c = s.charCodeAt(i) - 48
    if (c < 0 || c > 9) return -1
    value = value * 10 + c
  }
  return value
}

/** `YYYY-MM-DD` at `from` as days since the epoch, or `undefined`. */
const dateAt = (s: string, from: number): number | undefined => {
  if (s.length < from + 10 || s.charCodeAt(from + 4) !== 45 || s.charCodeAt(from + 7) !== 45) return undefined
  const year = digits(s, from, 4)
  const month = digits(s, from + 5, 2)
  const day = digits(s, from + 8, 2)
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined
  return daysFromCivil(year, month, day)
}

/**
 * `HH:MM:SS[.F{1,6}]` at `from`: `[secondOfDay, micros, end]` where `end` is the index after the
 * fraction, or `undefined`.
 */
const timeAt = (s: string, from: number): readonly [number, number, number] | undefined => {
  if (s.length < from + 8 || s.charCodeAt(from + 2) !== 58 || s.charCodeAt(from + 5) !== 58) return undefined
  const hour = digits(s, from, 2)
  const minute = digits(s, from + 3, 2)
  const second = digits(s, from + 6, 2)
  if (hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59) return undefined
  let end = from + 8
  let micros = 0
  if (s.charCodeAt(end) === 46) {
    let scale = 100_000
    end++
    const fractionStart = end
    while (end < s.length && end - fractionStart < 7) {
      const c = s.charCodeAt(end) - 48
      if (c < 0 || c > 9) break
      micros += c * scale
      scale /= 10
      end++
    }
    const count = end - fractionStart
    if (count === 0 || count > 6) return undefined
  }
  return [hour * 3600 + minute * 60 + second, micros, end]
}

const isDateTimeSeparator = (c: number): boolean => c === 32 || c === 84 || c === 116

/** `YYYY-MM-DD` as days since the epoch (0001-01-01..9999-12-31), or `undefined`. @internal */
export const parseDate = (s: string): number | undefined => (s.length === 10 ? dateAt(s, 0) : undefined)

/** Whether `s` is `HH:MM:SS[.F{1,6}]`. @internal */
export const isTime = (s: string): boolean => {
  const time = timeAt(s, 0)
  return time !== undefined && time[2] === s.length
}

/**
 * `YYYY-MM-DD[ |T]HH:MM:SS[.F{1,6}]` in the canonical form the Storage Write API takes (a space
 * between date and time), or `undefined` when invalid.
 *
 * @internal
 */
export const canonicalDatetime = (s: string): string | undefined => {
  if (s.length < 19 || dateAt(s, 0) === undefined || !isDateTimeSeparator(s.charCodeAt(10))) return undefined
  const time = timeAt(s, 11)
  if (time === undefined || time[2] !== s.length) return undefined
  return s.charCodeAt(10) === 32 ? s : `${s.slice(0, 10)} ${s.slice(11)}`
}

/**
 * An RFC 3339 timestamp `YYYY-MM-DD[ |T]HH:MM:SS[.F{1,6}](Z|±HH:MM)` as `[seconds, micros]` since
 * the epoch (micros in 0..999999), or `undefined`. The range is not checked here.
 *
 * @internal
 */
export const parseTimestamp = (s: string): readonly [number, number] | undefined => {
  if (s.length < 20 || !isDateTimeSeparator(s.charCodeAt(10))) return undefined
  const days = dateAt(s, 0)
  const time = timeAt(s, 11)
  if (days === undefined || time === undefined) return undefined
  const end = time[2]
  let offset = 0
  const zone = s.charCodeAt(end)
  if (zone === 90 || zone === 122) {
    if (end + 1 !== s.length) return undefined
  } else if (zone === 43 || zone === 45) {
    if (end + 6 !== s.length || s.charCodeAt(end + 3) !== 58) return undefined
    const hours = digits(s, end + 1, 2)
    const minutes = digits(s, end + 4, 2)
    if (hours < 0 || hours > 23 || minutes < 0 || minutes > 59) return undefined
    offset = (zone === 43 ? 1 : -1) * (hours * 3600 + minutes * 60)
  } else {
    return undefined
  }
  return [days * 86_400 + time[0] - offset, time[1]]
}
