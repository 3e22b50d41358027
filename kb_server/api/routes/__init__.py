"""One APIRouter per area."""
