//! Field sections that may reference the dynamic table (RFC 9204 §4.5):
//! the prefix's Required Insert Count and Base, and every representation.

use std::borrow::Cow;

use crate::field::{
    FIELD_OVERHEAD, INDEXED, INDEXED_STATIC, LITERAL_NAME, NAME_REF, NAME_REF_STATIC, Reader,
    static_ref,
};
use crate::table::Table;
use crate::{DecodeError, Field};

/// MaxEntries (RFC 9204 §4.5.1.1) for a maximum table capacity.
pub(crate) fn max_entries(max_capacity: u64) -> u64 {
    max_capacity / 32
}

/// Encoded Required Insert Count (RFC 9204 §4.5.1.1).
//= https://www.rfc-editor.org/rfc/rfc9204#section-4.5.1.1
//# If Required Insert Count is 0, the encoder sets the value of
//# Encoded Required Insert Count to 0.  Otherwise, the encoder
//# sets Encoded Required Insert Count to
//# (ReqInsertCount mod (2 * MaxEntries)) + 1.
pub(crate) fn encode_ric(ric: u64, max_capacity: u64) -> u64 {
    if ric == 0 {
        return 0;
    }
    ric % (2 * max_entries(max_capacity)) + 1
}

/// Required Insert Count from its encoding, the decoder's Insert Count and
/// its maximum capacity (RFC 9204 §4.5.1.1).
pub(crate) fn decode_ric(
    encoded: u64,
    total_inserts: u64,
    max_capacity: u64,
) -> Result<u64, DecodeError> {
    if encoded == 0 {
        return Ok(0);
    }
    let max_entries = max_entries(max_capacity);
    let full_range = 2 * max_entries;
    //= https://www.rfc-editor.org/rfc/rfc9204#section-4.5.1.1
    //# If the decoder encounters a value
    //# of EncodedInsertCount that could not have been produced by a
    //# conformant encoder, it MUST treat this as a connection error of type
    //# QPACK_DECOMPRESSION_FAILED.
    if encoded > full_range {
        return Err(DecodeError::BadInsertCount);
    }
    let max_value = total_inserts + max_entries;
    let max_wrapped = max_value / full_range * full_range;
    let mut ric = max_wrapped + encoded - 1;
    if ric > max_value {
        if ric <= full_range {
            return Err(DecodeError::BadInsertCount);
        }
        ric -= full_range;
    }
    if ric == 0 {
        return Err(DecodeError::BadInsertCount);
    }
    Ok(ric)
}

/// Reads the prefix: (Required Insert Count, Base).
pub(crate) fn read_prefix(
    r: &mut Reader<'_>,
    total_inserts: u64,
    max_capacity: u64,
) -> Result<(u64, u64), DecodeError> {
    let ric = decode_ric(r.int(8)?, total_inserts, max_capacity)?;
    let sign = r.peek()? & 0x80 != 0;
    let delta = r.int(7)?;
    //= https://www.rfc-editor.org/rfc/rfc9204#section-4.5.1.2
    //# An endpoint MUST treat a field block
    //# with a Sign bit of 1 as invalid if the value of Required Insert Count
    //# is less than or equal to the value of Delta Base.
    let base = if sign {
        ric.checked_sub(delta)
            .and_then(|b| b.checked_sub(1))
            .ok_or(DecodeError::BadBase)?
    } else {
        ric.checked_add(delta).ok_or(DecodeError::BadBase)?
    };
    Ok((ric, base))
}

/// Decodes the representations after the prefix against `table`, whose
/// Insert Count is at least `ric`. Every dynamic reference must be below
/// `ric` (RFC 9204 §2.2.3) and still in the table.
pub(crate) fn decode_lines(
    r: &mut Reader<'_>,
    table: &Table,
    ric: u64,
    base: u64,
) -> Result<Vec<Field>, DecodeError> {
    let entry = |abs: Option<u64>| {
        abs.filter(|&a| a < ric)
            .and_then(|a| table.get(a))
            .ok_or(DecodeError::BadDynamicIndex)
    };
    // Relative and post-Base indices to absolute (RFC 9204 §3.2.5, §3.2.6).
    let relative = |i: u64| base.checked_sub(i).and_then(|v| v.checked_sub(1));
    let post_base = |i: u64| base.checked_add(i);
    let mut fields = Vec::new();
    while let Some(&first) = r.buf.first() {
        let field = if first & INDEXED != 0 {
            let index = r.int(6)?;
            if first & INDEXED_STATIC != 0 {
                let (name, value) = static_ref(index)?;
                r.charge(FIELD_OVERHEAD + name.len() as u64 + value.len() as u64)?;
                Field {
                    name: Cow::Borrowed(name),
                    value: Cow::Borrowed(value),
                }
            } else {
                dynamic_field(r, entry(relative(index))?)?
            }
        } else if first & NAME_REF != 0 {
            let index = r.int(4)?;
            let name: Cow<'static, [u8]> = if first & NAME_REF_STATIC != 0 {
                Cow::Borrowed(static_ref(index)?.0)
            } else {
                Cow::Owned(entry(relative(index))?.name.to_vec())
            };
            r.charge(FIELD_OVERHEAD + name.len() as u64)?;
            let value = Cow::Owned(r.string(7)?);
            Field { name, value }
        } else if first & LITERAL_NAME != 0 {
            r.charge(FIELD_OVERHEAD)?;
            let name = Cow::Owned(r.string(3)?);
            let value = Cow::Owned(r.string(7)?);
            Field { name, value }
        } else if first & 0x10 != 0 {
            // 0001: Indexed Field Line With Post-Base Index.
            let index = r.int(4)?;
            dynamic_field(r, entry(post_base(index))?)?
        } else {
            // 0000N: Literal Field Line With Post-Base Name Reference.
            let index = r.int(3)?;
            let name = entry(post_base(index))?.name.to_vec();
            r.charge(FIELD_OVERHEAD + name.len() as u64)?;
            let value = r.string(7)?;
            Field {
                name: Cow::Owned(name),
                value: Cow::Owned(value),
            }
        };
        fields.push(field);
    }
    Ok(fields)
}

fn dynamic_field(r: &mut Reader<'_>, e: &crate::table::Entry) -> Result<Field, DecodeError> {
    r.charge(e.size())?;
    Ok(Field {
        name: Cow::Owned(e.name.to_vec()),
        value: Cow::Owned(e.value.to_vec()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn required_insert_count_wraps() {
        // MaxEntries 6 (capacity 220 as in RFC 9204 Appendix B): FullRange 12.
        assert_eq!(encode_ric(2, 220), 3);
        assert_eq!(encode_ric(4, 220), 5);
        assert_eq!(decode_ric(3, 2, 220), Ok(2));
        assert_eq!(decode_ric(5, 3, 220), Ok(4));
        // Every count within the window round-trips, across wraps.
        for total in 0..200u64 {
            // The window: entries a section can still reference (MaxEntries back).
            for ric in (total + 1).saturating_sub(6).max(1)..=total + 6 {
                let enc = encode_ric(ric, 220);
                assert_eq!(
                    decode_ric(enc, total, 220),
                    Ok(ric),
                    "total {total} ric {ric}"
                );
            }
        }
        assert_eq!(decode_ric(13, 0, 220), Err(DecodeError::BadInsertCount));
        assert_eq!(decode_ric(1, 0, 0), Err(DecodeError::BadInsertCount));
    }
}
