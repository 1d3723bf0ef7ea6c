;; alfworld-mini: examine-alarmclock (office)
;; The alarm clock is on the dresser but the desk lamp is on the desk; carry the clock to the lamp.
;; Display names: Desk_bar_1 = desk 1, Drawer_bar_3 = drawer 1, Drawer_bar_2 = drawer 2, Drawer_bar_1 = drawer 3, Dresser_bar_1 = dresser 1, GarbageCan_bar_1 = garbagecan 1, Shelf_bar_2 = shelf 1, Shelf_bar_1 = shelf 2, SideTable_bar_1 = sidetable 1
;;                AlarmClock_bar_1 = alarmclock 1, DeskLamp_bar_1 = desklamp 1, CellPhone_bar_1 = cellphone 1, Watch_bar_1 = watch 1, KeyChain_bar_1 = keychain 1, Book_bar_1 = book 1, Mug_bar_1 = mug 1, Pencil_bar_1 = pencil 1, CreditCard_bar_1 = creditcard 1
(define (problem examine_alarmclock)
    (:domain alfred)
    (:objects
        agent1 - agent
        AlarmClockType - otype
        BookType - otype
        ButterKnifeType - otype
        CellPhoneType - otype
        CreditCardType - otype
        DeskLampType - otype
        KeyChainType - otype
        KnifeType - otype
        MugType - otype
        PencilType - otype
        WatchType - otype
        DeskType - rtype
        DrawerType - rtype
        DresserType - rtype
        FridgeType - rtype
        GarbageCanType - rtype
        MicrowaveType - rtype
        ShelfType - rtype
        SideTableType - rtype
        SinkBasinType - rtype
        AlarmClock_bar_1 - object
        DeskLamp_bar_1 - object
        CellPhone_bar_1 - object
        Watch_bar_1 - object
        KeyChain_bar_1 - object
        Book_bar_1 - object
        Mug_bar_1 - object
        Pencil_bar_1 - object
        CreditCard_bar_1 - object
        Desk_bar_1 - receptacle
        Drawer_bar_3 - receptacle
        Drawer_bar_2 - receptacle
        Drawer_bar_1 - receptacle
        Dresser_bar_1 - receptacle
        GarbageCan_bar_1 - receptacle
        Shelf_bar_2 - receptacle
        Shelf_bar_1 - receptacle
        SideTable_bar_1 - receptacle
        loc_bar_0 - location
        loc_bar_1 - location
        loc_bar_2 - location
        loc_bar_3 - location
        loc_bar_4 - location
        loc_bar_5 - location
        loc_bar_6 - location
        loc_bar_7 - location
        loc_bar_8 - location
        loc_bar_9 - location
    )
    (:init
        (atLocation agent1 loc_bar_0)
        (receptacleType Desk_bar_1 DeskType)
        (receptacleAtLocation Desk_bar_1 loc_bar_1)
        (receptacleType Drawer_bar_3 DrawerType)
        (receptacleAtLocation Drawer_bar_3 loc_bar_2)
        (openable Drawer_bar_3)
        (receptacleType Drawer_bar_2 DrawerType)
        (receptacleAtLocation Drawer_bar_2 loc_bar_3)
        (openable Drawer_bar_2)
        (receptacleType Drawer_bar_1 DrawerType)
        (receptacleAtLocation Drawer_bar_1 loc_bar_4)
        (openable Drawer_bar_1)
        (receptacleType Dresser_bar_1 DresserType)
        (receptacleAtLocation Dresser_bar_1 loc_bar_5)
        (receptacleType GarbageCan_bar_1 GarbageCanType)
        (receptacleAtLocation GarbageCan_bar_1 loc_bar_6)
        (receptacleType Shelf_bar_2 ShelfType)
        (receptacleAtLocation Shelf_bar_2 loc_bar_7)
        (receptacleType Shelf_bar_1 ShelfType)
        (receptacleAtLocation Shelf_bar_1 loc_bar_8)
        (receptacleType SideTable_bar_1 SideTableType)
        (receptacleAtLocation SideTable_bar_1 loc_bar_9)
        (objectType AlarmClock_bar_1 AlarmClockType)
        (inReceptacle AlarmClock_bar_1 Dresser_bar_1)
        (objectAtLocation AlarmClock_bar_1 loc_bar_5)
        (pickupable AlarmClock_bar_1)
        (objectType DeskLamp_bar_1 DeskLampType)
        (inReceptacle DeskLamp_bar_1 Desk_bar_1)
        (objectAtLocation DeskLamp_bar_1 loc_bar_1)
        (toggleable DeskLamp_bar_1)
        (objectType CellPhone_bar_1 CellPhoneType)
        (inReceptacle CellPhone_bar_1 Dresser_bar_1)
        (objectAtLocation CellPhone_bar_1 loc_bar_5)
        (pickupable CellPhone_bar_1)
        (objectType Watch_bar_1 WatchType)
        (inReceptacle Watch_bar_1 SideTable_bar_1)
        (objectAtLocation Watch_bar_1 loc_bar_9)
        (pickupable Watch_bar_1)
        (objectType KeyChain_bar_1 KeyChainType)
        (inReceptacle KeyChain_bar_1 Drawer_bar_2)
        (objectAtLocation KeyChain_bar_1 loc_bar_3)
        (pickupable KeyChain_bar_1)
        (objectType Book_bar_1 BookType)
        (inReceptacle Book_bar_1 Shelf_bar_2)
        (objectAtLocation Book_bar_1 loc_bar_7)
        (pickupable Book_bar_1)
        (objectType Mug_bar_1 MugType)
        (inReceptacle Mug_bar_1 Desk_bar_1)
        (objectAtLocation Mug_bar_1 loc_bar_1)
        (pickupable Mug_bar_1)
        (heatable Mug_bar_1)
        (coolable Mug_bar_1)
        (cleanable Mug_bar_1)
        (isReceptacleObject Mug_bar_1)
        (objectType Pencil_bar_1 PencilType)
        (inReceptacle Pencil_bar_1 Shelf_bar_1)
        (objectAtLocation Pencil_bar_1 loc_bar_8)
        (pickupable Pencil_bar_1)
        (objectType CreditCard_bar_1 CreditCardType)
        (inReceptacle CreditCard_bar_1 Drawer_bar_1)
        (objectAtLocation CreditCard_bar_1 loc_bar_4)
        (pickupable CreditCard_bar_1)
        (canContain DeskType AlarmClockType)
        (canContain DeskType BookType)
        (canContain DeskType CellPhoneType)
        (canContain DeskType CreditCardType)
        (canContain DeskType KeyChainType)
        (canContain DeskType MugType)
        (canContain DeskType PencilType)
        (canContain DeskType WatchType)
        (canContain DrawerType BookType)
        (canContain DrawerType CellPhoneType)
        (canContain DrawerType CreditCardType)
        (canContain DrawerType KeyChainType)
        (canContain DrawerType PencilType)
        (canContain DrawerType WatchType)
        (canContain DresserType AlarmClockType)
        (canContain DresserType BookType)
        (canContain DresserType CellPhoneType)
        (canContain DresserType CreditCardType)
        (canContain DresserType KeyChainType)
        (canContain DresserType MugType)
        (canContain DresserType PencilType)
        (canContain DresserType WatchType)
        (canContain GarbageCanType PencilType)
        (canContain ShelfType AlarmClockType)
        (canContain ShelfType BookType)
        (canContain ShelfType CellPhoneType)
        (canContain ShelfType CreditCardType)
        (canContain ShelfType KeyChainType)
        (canContain ShelfType MugType)
        (canContain ShelfType PencilType)
        (canContain ShelfType WatchType)
        (canContain SideTableType AlarmClockType)
        (canContain SideTableType BookType)
        (canContain SideTableType CellPhoneType)
        (canContain SideTableType CreditCardType)
        (canContain SideTableType KeyChainType)
        (canContain SideTableType MugType)
        (canContain SideTableType PencilType)
        (canContain SideTableType WatchType)
    )
    (:goal
        (and
            (exists (?t - object ?r - receptacle ?a - agent ?l - location)
                (and
                    (objectType ?t DeskLampType)
                    (toggleable ?t)
                    (isToggled ?t)
                    (inReceptacle ?t ?r)
                    (receptacleAtLocation ?r ?l)
                    (atLocation ?a ?l)
                )
            )
            (exists (?o - object ?a - agent)
                (and
                    (objectType ?o AlarmClockType)
                    (holds ?a ?o)
                )
            )
        )
    )
)
