//! The three spaces' loss state. Initial and Handshake share one box, dropped
//! once both are discarded (RFC 9001 §4.9): an established connection keeps
//! only the Application space, inline, so the 1-RTT path is a field access.

use crate::types::SpaceId;

pub(super) struct SpaceSet<S> {
    data: S,
    early: Option<Box<[S; 2]>>,
    /// Which of Initial and Handshake were discarded (bit = index).
    discarded: u8,
}

impl<S> SpaceSet<S> {
    pub(super) fn new(make: impl Fn() -> S) -> Self {
        SpaceSet {
            data: make(),
            early: Some(Box::new([make(), make()])),
            discarded: 0,
        }
    }

    /// A space's state; `None` for an early space already dropped, which
    /// reads as empty.
    #[inline]
    pub(super) fn get(&self, i: usize) -> Option<&S> {
        if i == SpaceId::Data.index() {
            return Some(&self.data);
        }
        self.early.as_ref().map(|e| &e[i])
    }

    /// A space's state to change. Rare for a dropped early space (a late
    /// call); it comes back empty and goes again at the next discard.
    #[inline]
    pub(super) fn get_mut(&mut self, i: usize, make: impl Fn() -> S) -> &mut S {
        if i == SpaceId::Data.index() {
            return &mut self.data;
        }
        &mut self.early.get_or_insert_with(|| Box::new([make(), make()]))[i]
    }

    /// `i`'s state was cleared for good; once Initial and Handshake both are,
    /// their box goes.
    pub(super) fn discarded(&mut self, i: usize) {
        if i != SpaceId::Data.index() {
            self.discarded |= 1 << i;
        }
        if self.discarded == 0b11 {
            self.early = None;
        }
    }

    /// Whether the Initial and Handshake state is still held.
    #[cfg(test)]
    pub(super) fn holds_early(&self) -> bool {
        self.early.is_some()
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &S> {
        self.early
            .iter()
            .flat_map(|e| e.iter())
            .chain(std::iter::once(&self.data))
    }

    pub(super) fn iter_mut(&mut self) -> impl Iterator<Item = &mut S> {
        self.early
            .iter_mut()
            .flat_map(|e| e.iter_mut())
            .chain(std::iter::once(&mut self.data))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn early_spaces_go_once_both_are_discarded() {
        let mut s = SpaceSet::new(|| 0u32);
        *s.get_mut(SpaceId::Initial.index(), || 0) = 1;
        *s.get_mut(SpaceId::Data.index(), || 0) = 3;
        s.discarded(SpaceId::Initial.index());
        assert!(s.holds_early(), "Handshake still in use");
        assert_eq!(s.get(SpaceId::Initial.index()), Some(&1));
        s.discarded(SpaceId::Handshake.index());
        assert!(!s.holds_early());
        assert_eq!(s.get(SpaceId::Initial.index()), None);
        assert_eq!(s.get(SpaceId::Handshake.index()), None);
        assert_eq!(s.get(SpaceId::Data.index()), Some(&3));
        assert_eq!(s.iter().copied().collect::<Vec<_>>(), [3]);
        // A late write brings them back empty; the next discard drops them.
        *s.get_mut(SpaceId::Handshake.index(), || 0) += 7;
        assert_eq!(s.iter().copied().collect::<Vec<_>>(), [0, 7, 3]);
        s.discarded(SpaceId::Handshake.index());
        assert!(!s.holds_early());
    }
}
