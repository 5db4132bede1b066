// Placeholder until this target's first source lands.
