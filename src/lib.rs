//! graphlift
